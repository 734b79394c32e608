#include "actors/node/node_definitions.hpp"

#include "actors/common/vhost_protocol.hpp"

#include "actors/common/gather.hpp"
#include "actors/node/permissions.hpp"
#include "actors/node/users.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

namespace warren {

namespace {

using vhost_name_set = std::set<std::string>;
using named = std::set<std::pair<std::string, std::string>>;  // (vhost, name)

std::vector<caf::actor> vhost_actors(const node_state& st) {
  std::vector<caf::actor> out;
  for (const auto& [name, vhost] : st.vhosts) out.push_back(vhost);
  return out;
}

// Vhosts answer in any order; a sorted export diffs well and is the same for the same setup.
void sort_topology(definitions& defs) {
  auto by_name = [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.name) < std::tie(b.first, b.second.name);
  };
  std::sort(defs.exchanges.begin(), defs.exchanges.end(), by_name);
  std::sort(defs.queues.begin(), defs.queues.end(), by_name);
  std::sort(defs.bindings.begin(), defs.bindings.end(), [](const auto& a, const auto& b) {
    const auto &x = a.second, &y = b.second;
    return std::tie(a.first, x.exchange, x.to_exchange, x.destination, x.key) <
           std::tie(b.first, y.exchange, y.to_exchange, y.destination, y.key);
  });
}

// The durable, user-declared topology from the vhosts' listings.
void keep_durable_topology(definitions& out, std::vector<std::vector<exchange_info>> exchanges,
                           std::vector<std::vector<queue_info>> queues,
                           std::vector<std::vector<binding_info>> bindings) {
  named kept_exchanges, kept_queues;
  for (auto& part : exchanges)
    for (auto& e : part)
      if (e.spec.durable && !e.spec.name.empty() && !is_reserved_name(e.spec.name)) {
        kept_exchanges.insert({e.vhost, e.spec.name});
        out.exchanges.emplace_back(e.vhost, std::move(e.spec));
      }
  for (auto& part : queues)
    for (auto& q : part)
      if (q.spec.durable && !q.spec.exclusive) {
        kept_queues.insert({q.vhost, q.spec.name});
        out.queues.emplace_back(q.vhost, std::move(q.spec));
      }
  for (auto& part : bindings)
    for (auto& b : part) {
      const auto& s = b.spec;
      bool source = kept_exchanges.count({b.vhost, s.exchange}) != 0 ||
                    (!s.exchange.empty() && is_reserved_name(s.exchange));
      bool destination =
          (s.to_exchange ? kept_exchanges : kept_queues).count({b.vhost, s.destination}) != 0;
      if (source && destination) out.bindings.emplace_back(b.vhost, std::move(b.spec));
    }
  sort_topology(out);
}

template <class Row, class Atom>
void list_all(node_self self, Atom what, std::function<void(std::vector<std::vector<Row>>)> done) {
  gather<std::vector<Row>>(
      vhost_actors(self->state),
      [=](const caf::actor& v) {
        return self->request(vhost_handle(v), caf::infinite, list_atom::value, what);
      },
      std::move(done));
}

}  // namespace

void collect_definitions(node_self self, std::function<void(definitions)> done) {
  const auto& st = self->state;
  auto out = std::make_shared<definitions>();
  for (const auto& [name, u] : st.users) out->users.push_back(u);
  for (const auto& [name, vhost] : st.vhosts) {
    auto l = st.limits_of.find(name);
    out->vhosts.push_back({name, l == st.limits_of.end() ? vhost_limits{} : l->second});
  }
  for (const auto& [key, p] : st.permissions) out->permissions.push_back(p);
  list_all<exchange_info>(self, exchanges_atom::value, [=](auto exchanges) {
    list_all<queue_info>(self, queues_atom::value, [=](auto queues) mutable {
      list_all<binding_info>(self, bindings_atom::value, [=](auto bindings) mutable {
        keep_durable_topology(*out, std::move(exchanges), std::move(queues), std::move(bindings));
        done(std::move(*out));
      });
    });
  });
}

namespace {

std::string check_users(const node_state& st, const definitions& defs, std::set<std::string>& all) {
  for (const auto& [name, u] : st.users) all.insert(name);
  for (const auto& u : defs.users) {
    if (auto problem = check_name("user name", u.name); !problem.empty()) return problem;
    if (!is_password_hash(u.password_hash))
      return "user " + quote(u.name) +
             ": the password hash is not RabbitMQ's salted SHA-256 "
             "(base64 of a 4-byte salt and a 32-byte digest)";
    all.insert(u.name);
  }
  return {};
}

std::string check_vhost(const vhost_name_set& vhosts, const std::string& vhost,
                        const std::string& what) {
  return vhosts.count(vhost) != 0
             ? std::string()
             : what + " refers to vhost " + quote(vhost) + ", which neither exists nor is defined";
}

std::string check_topology(const definitions& defs, const vhost_name_set& vhosts) {
  for (const auto& [vhost, e] : defs.exchanges) {
    auto what = "exchange " + quote(e.name);
    if (auto p = check_vhost(vhosts, vhost, what); !p.empty()) return p;
    if (auto p = check_name("exchange name", e.name); !p.empty()) return p;
    if (auto p = check_field_depth("arguments of " + what, e.arguments); !p.empty()) return p;
    if (e.name.empty() || is_reserved_name(e.name))
      return what + " in vhost " + quote(vhost) + " is built in; it cannot be defined";
  }
  for (const auto& [vhost, q] : defs.queues) {
    auto what = "queue " + quote(q.name);
    if (auto p = check_vhost(vhosts, vhost, what); !p.empty()) return p;
    if (auto p = check_name("queue name", q.name); !p.empty()) return p;
    if (auto p = check_field_depth("arguments of " + what, q.arguments); !p.empty()) return p;
    if (q.exclusive) return what + " is exclusive: an exclusive queue belongs to one connection";
  }
  for (const auto& [vhost, b] : defs.bindings) {
    auto what = "a binding from " + quote(b.exchange);
    if (auto p = check_vhost(vhosts, vhost, what); !p.empty()) return p;
    if (auto p = check_field_depth("arguments of " + what, b.arguments); !p.empty()) return p;
  }
  return {};
}

}  // namespace

std::string check_definitions(const node_state& st, const definitions& defs) {
  std::set<std::string> users;
  if (auto problem = check_users(st, defs, users); !problem.empty()) return problem;
  vhost_name_set vhosts;
  for (const auto& [name, v] : st.vhosts) vhosts.insert(name);
  for (const auto& v : defs.vhosts) {
    if (auto problem = check_name("vhost name", v.name); !problem.empty()) return problem;
    vhosts.insert(v.name);
  }
  for (const auto& p : defs.permissions) {
    auto what = "the permissions of user " + quote(p.user);
    if (users.count(p.user) == 0)
      return what + " refer to a user that neither exists nor is defined";
    if (auto problem = check_vhost(vhosts, p.vhost, what); !problem.empty()) return problem;
    for (const auto* pattern : {&p.configure, &p.write, &p.read})
      if (auto problem = check_permission_pattern(*pattern); !problem.empty())
        return what + " in vhost " + quote(p.vhost) + ": " + problem;
  }
  return check_topology(defs, vhosts);
}

void declare_topology(node_self self, const definitions& defs,
                      std::function<void(caf::error)> done) {
  struct pending {
    size_t left;
    std::vector<caf::error> errors;  // by step, in order
    std::function<void(caf::error)> done;
  };
  size_t steps = defs.exchanges.size() + defs.queues.size() + defs.bindings.size();
  if (steps == 0) return done(caf::error{});
  auto acc = std::make_shared<pending>(pending{steps, std::vector<caf::error>(steps), done});
  auto answered = [acc](size_t step, caf::error err) {
    acc->errors[step] = std::move(err);
    if (--acc->left != 0) return;
    for (auto& e : acc->errors)
      if (e) return acc->done(std::move(e));
    acc->done(caf::error{});
  };
  auto vhost_of = [self](const std::string& name) {
    return vhost_handle(self->state.vhosts.at(name));
  };
  auto me = caf::actor_cast<caf::actor>(self);
  size_t step = 0;
  for (const auto& [vhost, e] : defs.exchanges) {
    self->request(vhost_of(vhost), caf::infinite, declare_atom::value, e, false)
        .then([=]() { answered(step, {}); }, [=](caf::error& err) { answered(step, err); });
    ++step;
  }
  for (const auto& [vhost, q] : defs.queues) {
    self->request(vhost_of(vhost), caf::infinite, declare_atom::value, q, false, me)
        .then([=](queue_info&) { answered(step, {}); },
              [=](caf::error& err) { answered(step, err); });
    ++step;
  }
  for (const auto& [vhost, b] : defs.bindings) {
    self->request(vhost_of(vhost), caf::infinite, bind_atom::value, b, me)
        .then([=]() { answered(step, {}); }, [=](caf::error& err) { answered(step, err); });
    ++step;
  }
}

}  // namespace warren
