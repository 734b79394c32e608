// The node actor's part in the cluster: listings and forgetting go to the cluster actor; what
// the cluster actor learns about other members' queues goes to the vhosts, and a member going
// down to the vhosts and the connections (whose waiting confirms may depend on it).
#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/common/gather.hpp"
#include "actors/common/vhost_protocol.hpp"
#include "actors/node/node_parts.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <map>

namespace warren::node_parts {

caf::result<std::vector<node_info>> list_nodes(self_ptr self) {
  if (!self->state.cluster)
    return make_broker_error(reply_code::internal_error, "the node has no cluster actor");
  return self->delegate(cluster_handle(self->state.cluster), list_atom::value, nodes_atom::value);
}

caf::result<void> forget_node(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "forgetting a node")) return err;
  if (!self->state.cluster)
    return make_broker_error(reply_code::internal_error, "the node has no cluster actor");
  return self->delegate(cluster_handle(self->state.cluster), forget_atom::value, name);
}

void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& name) {
  auto& st = self->state;
  st.cluster = cluster;
  st.node_name = name;
  for (const auto& [vhost_name, vhost] : st.vhosts)
    self->send(vhost_handle(vhost), cluster_atom::value, cluster, name);
}

// A complete list goes to every vhost, also those where `from` has no queue left: each forgets
// what `from` no longer has.
void placements_arrived(self_ptr self, const std::string& from,
                        std::vector<queue_placement>& placements, bool complete) {
  auto& st = self->state;
  if (!complete) {
    for (auto& p : placements) {
      auto retry = [=](bool here) mutable {
        if (!here) return;
        std::vector<queue_placement> one{p};
        placements_arrived(self, from, one, false);
      };
      if (wait_for_vhost(self, p.vhost, retry)) continue;
      auto v = st.vhosts.find(p.vhost);
      if (v != st.vhosts.end())
        self->send(vhost_handle(v->second), placed_atom::value, std::move(p));
    }
    return;
  }
  std::map<std::string, std::vector<queue_placement>> by_vhost;
  for (auto& p : placements) by_vhost[p.vhost].push_back(std::move(p));
  for (const auto& [name, vhost] : st.vhosts)
    self->send(vhost_handle(vhost), placed_atom::value, from, std::move(by_vhost[name]));
}

void queue_removed(self_ptr self, const std::string& vhost, const std::string& queue,
                   const std::string& node) {
  auto& st = self->state;
  auto v = st.vhosts.find(vhost);
  if (v != st.vhosts.end()) self->send(vhost_handle(v->second), removed_atom::value, queue, node);
}

void node_gone(self_ptr self, const std::string& node, bool down) {
  auto& st = self->state;
  for (const auto& [name, vhost] : st.vhosts) {
    if (down)
      self->send(vhost_handle(vhost), down_atom::value, node);
    else
      self->send(vhost_handle(vhost), removed_atom::value, node);
  }
  if (!down) return;
  for (const auto& [addr, conn] : st.connections)
    self->send(caf::actor_cast<connection_actor_type>(conn), down_atom::value, node);
}

namespace {

template <class... Ts>
void apply_one(self_ptr self, const caf::actor& vhost, const std::string& what, Ts&&... xs) {
  self->request(vhost_handle(vhost), caf::infinite, std::forward<Ts>(xs)...)
      .then([] {},
            [=](caf::error& err) {
              log(log_level::warn, "cluster", what + ": " + to_string(describe(err)));
            });
}

}  // namespace

void apply_changes(self_ptr self, const std::string& from, const std::string& vhost,
                   std::vector<topology_change>& changes) {
  auto retry = [=, later = changes](bool here) mutable {
    if (here) apply_changes(self, from, vhost, later);
  };
  if (wait_for_vhost(self, vhost, retry)) return;
  auto v = self->state.vhosts.find(vhost);
  if (v == self->state.vhosts.end()) return;
  auto what = [&](const std::string& change) {
    return change + " in vhost " + quote(vhost) + " (from " + from + ") not applied";
  };
  for (auto& c : changes) {
    switch (c.kind) {
      case topology_change::declare_exchange:
        apply_one(self, v->second, what("exchange " + quote(c.exchange.name)),
                  replicate_atom::value, std::move(c.exchange));
        break;
      case topology_change::delete_exchange:
        apply_one(self, v->second, what("deleting exchange " + quote(c.name)),
                  replicate_atom::value, delete_atom::value, std::move(c.name));
        break;
      case topology_change::bind:
      case topology_change::unbind: {
        auto text =
            "binding of " + quote(c.binding.destination) + " to " + quote(c.binding.exchange);
        if (c.kind == topology_change::bind)
          apply_one(self, v->second, what(text), replicate_atom::value, bind_atom::value,
                    std::move(c.binding));
        else
          apply_one(self, v->second, what("un" + text), replicate_atom::value, unbind_atom::value,
                    std::move(c.binding));
        break;
      }
      default:
        log(log_level::warn, "cluster", "unknown topology change from " + from);
    }
  }
}

namespace {

access_change whole_access(const node_state& st) {
  access_change view;
  for (const auto& [name, u] : st.users) view.put.users.push_back(u);
  for (const auto& [name, vhost] : st.vhosts) {
    auto l = st.limits_of.find(name);
    view.put.vhosts.push_back({name, l == st.limits_of.end() ? vhost_limits{} : l->second});
  }
  for (const auto& [key, p] : st.permissions) view.put.permissions.push_back(p);
  return view;
}

// Adopting a member's whole view: what we have and it lacks goes.
void remove_what_view_lacks(const node_state& st, access_change& view) {
  auto has = [](const auto& list, auto match) {
    return std::any_of(list.begin(), list.end(), match);
  };
  for (const auto& [name, u] : st.users)
    if (!has(view.put.users, [&](const user_record& x) { return x.name == name; }))
      view.users_deleted.push_back(name);
  for (const auto& [name, vhost] : st.vhosts)
    if (!has(view.put.vhosts, [&](const vhost_definition& x) { return x.name == name; }))
      view.vhosts_deleted.push_back(name);
  for (const auto& [key, p] : st.permissions)
    if (!has(view.put.permissions, [&](const permission_record& x) {
          return x.user == key.first && x.vhost == key.second;
        }))
      view.permissions_cleared.push_back(p);
}

}  // namespace

void share_access(self_ptr self, access_change change) {
  if (!self->state.cluster) return;
  if (log_backed(self->state)) return;  // users, permissions and vhosts: the log carries them
  self->send(cluster_handle(self->state.cluster), replicate_atom::value, std::move(change));
}

access_change vhost_deleted(const std::string& name) {
  access_change change;
  change.vhosts_deleted.push_back(name);
  return change;
}

void apply_access(self_ptr self, const std::string& from, access_change& change) {
  auto& st = self->state;
  if (users_from_log_only(st)) strip_log_owned(change);  // the log brings those
  auto batch = apply_definitions(self, change.put);
  for (const auto& name : change.users_deleted) {
    if (st.users.erase(name) == 0) continue;
    batch.push_back(user_change(user_record{name, {}, {}}, true));
    forget_permissions(st, batch, [&](const auto& key) { return key.first == name; });
    access_withdrawn(self, name, nullptr, "user " + quote(name) + " was deleted");
  }
  for (const auto& p : change.permissions_cleared) {
    auto it = st.permissions.find({p.user, p.vhost});
    if (it == st.permissions.end()) continue;
    batch.push_back(permission_change(it->second, true));
    st.permissions.erase(it);
    access_withdrawn(self, p.user, &p.vhost,
                     "the permissions of user " + quote(p.user) + " in vhost " + quote(p.vhost) +
                         " were cleared");
  }
  auto failed = [from](const std::string& what) {
    return [=](const caf::error& err) {
      if (err)
        log(log_level::error, "cluster",
            what + " from " + from + " not stored: " + to_string(describe(err)));
    };
  };
  persist(self, st.storage.persistence, std::move(batch), failed("users and permissions"));
  for (const auto& name : change.vhosts_deleted)
    drop_vhost(self, name, true, failed("deleting vhost " + quote(name)));
}

namespace {

using placement_promise = caf::typed_response_promise<queue_info, queue_placement>;

void declare_in(self_ptr self, const std::string& vhost, queue_spec spec, placement_promise rp) {
  auto& st = self->state;
  auto v = st.vhosts.find(vhost);
  if (v == st.vhosts.end()) {
    rp.deliver(make_broker_error(reply_code::not_found,
                                 "no vhost " + quote(vhost) + " on node " + quote(st.node_name)));
    return;
  }
  auto home = v->second;
  auto node_name = st.node_name;
  const caf::actor no_connection;  // a member asks: the queue is not exclusive
  self->request(vhost_handle(home), caf::infinite, declare_atom::value, std::move(spec), false,
                no_connection)
      .then(
          [=](queue_info& info) mutable {
            self->request(vhost_handle(home), caf::infinite, find_atom::value, queues_atom::value,
                          info.spec.name, no_connection)
                .then(
                    [=](caf::actor& queue) mutable {
                      queue_placement placed{vhost, info.spec, node_name, queue, home};
                      rp.deliver(std::move(info), std::move(placed));
                    },
                    [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

}  // namespace

caf::result<queue_info, queue_placement> declare_for_member(self_ptr self, const std::string& vhost,
                                                            queue_spec& spec) {
  auto rp = self->make_response_promise<queue_info, queue_placement>();
  // Dropped or not, it is answered: declare_in refuses a vhost that is not here.
  auto declare = [=, spec = std::move(spec)](bool) mutable { declare_in(self, vhost, spec, rp); };
  if (!wait_for_vhost(self, vhost, declare)) declare(true);
  return rp;
}

caf::result<metadata_view> metadata_of(self_ptr self) {
  auto& st = self->state;
  auto rp = self->make_response_promise<metadata_view>();
  auto access = whole_access(st);
  std::vector<caf::actor> vhosts;
  for (const auto& [name, vhost] : st.vhosts) vhosts.push_back(vhost);
  gather<vhost_topology>(
      vhosts,
      [=](const caf::actor& vhost) {
        return self->request(vhost_handle(vhost), caf::infinite, view_atom::value);
      },
      [=](std::vector<vhost_topology> topologies) mutable {
        metadata_view view;
        view.access = std::move(access);
        view.vhosts = std::move(topologies);
        rp.deliver(std::move(view));
      });
  return rp;
}

void adopt_metadata(self_ptr self, metadata_view& view) {
  auto& st = self->state;
  remove_what_view_lacks(st, view.access);
  apply_access(self, view.from, view.access);
  // Vhosts the view adds exist now (apply_definitions started them); those it lacks are going.
  for (auto& topology : view.vhosts) {
    auto v = st.vhosts.find(topology.vhost);
    if (v != st.vhosts.end())
      self->send(vhost_handle(v->second), adopt_atom::value, std::move(topology));
  }
}

node_cluster_api::behavior_type cluster_behavior(self_ptr self) {
  using text = const std::string&;
  return {
      [=](list_atom, nodes_atom) { return list_nodes(self); },
      [=](forget_atom, text name) { return forget_node(self, name); },
      [=](applied_atom, uint64_t token, std::vector<persistence::meta_mutation>& changes,
          bool whole) { log_applied(self, token, changes, whole); },
      [=](propose_atom, const std::string& entry) { return propose_for_vhost(self, entry); },
      [=](placed_atom, text from, std::vector<queue_placement>& ps, bool complete) {
        placements_arrived(self, from, ps, complete);
      },
      [=](removed_atom, text vhost, text queue, text node) {
        queue_removed(self, vhost, queue, node);
      },
      [=](removed_atom, text node) { node_gone(self, node, false); },
      [=](down_atom, text node) { node_gone(self, node, true); },
      [=](replicate_atom, text from, text vhost, std::vector<topology_change>& changes) {
        apply_changes(self, from, vhost, changes);
      },
      [=](replicate_atom, text from, access_change& change) { apply_access(self, from, change); },
      [=](view_atom) { return metadata_of(self); },
      [=](declare_atom, text vhost, queue_spec& spec) {
        return declare_for_member(self, vhost, spec);
      },
      [=](adopt_atom, metadata_view& view) { adopt_metadata(self, view); },
      [=](claim_atom, text from, text vhost, const queue_spec& spec) -> caf::result<claim_reply> {
        auto v = self->state.vhosts.find(vhost);
        if (v == self->state.vhosts.end()) return claim_reply{};
        return self->delegate(vhost_handle(v->second), claim_atom::value, from, spec);
      },
  };
}

}  // namespace warren::node_parts
