#include "actors/node/node_actor.hpp"
#include "actors/node/node_definitions.hpp"
#include "actors/node/node_parts.hpp"
#include "actors/node/permissions.hpp"
#include "actors/node/users.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/behavior_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/common/gather.hpp"
#include "actors/node/grants.hpp"
#include "actors/node/resource_alarm.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/vhost/vhost_actor.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

namespace warren {

std::string check_login(const node_state& st, const client_hello& hello);

namespace node_parts {

persistence::meta_mutation user_change(const user_record& u, bool erase) {
  return {persistence::meta_table::users, persistence::user_key(u.name),
          erase ? std::string() : persistence::encode_user(u), erase};
}

persistence::meta_mutation permission_change(const permission_record& p, bool erase) {
  return {persistence::meta_table::permissions, persistence::permission_key(p.user, p.vhost),
          erase ? std::string() : persistence::encode_permission(p), erase};
}

std::string requester(self_ptr self) {
  auto& st = self->state;
  auto sender = self->current_sender();
  if (!sender) return {};
  auto c = st.connection_user.find(caf::actor_cast<caf::actor_addr>(sender));
  return c == st.connection_user.end() ? std::string() : c->second;
}

caf::result<void> store(self_ptr self, std::vector<persistence::meta_mutation> batch) {
  auto rp = self->make_response_promise<void>();
  warren::persist(self, self->state.storage.persistence, std::move(batch),
                  [=](const caf::error& err) mutable {
                    if (err)
                      rp.deliver(err);
                    else
                      deliver_unit(rp);
                  });
  return rp;
}

caf::error require_admin(self_ptr self, const char* what) {
  auto& st = self->state;
  auto u = st.users.find(requester(self));
  if (u != st.users.end() && has_tag(u->second, "administrator")) return {};
  return make_broker_error(reply_code::access_refused,
                           std::string(what) + " needs a user tagged administrator");
}

}  // namespace node_parts

namespace {

using namespace node_parts;

// The vhosts whose statistics the asker may see: every one for users tagged administrator or
// monitoring (RabbitMQ's rule) and for the node's own actors, else those the user has
// permissions in.
std::function<bool(const std::string&)> visible_vhosts(self_ptr self) {
  auto& st = self->state;
  auto name = requester(self);
  auto u = st.users.find(name);
  // Internal askers (the node's periodic statistics log) are no client connection: all.
  // (Every client asks through its connection actor, registered with a user at login.)
  bool internal = name.empty();
  if (internal || (u != st.users.end() &&
                   (has_tag(u->second, "administrator") || has_tag(u->second, "monitoring"))))
    return [](const std::string&) { return true; };
  std::set<std::string> mine;
  for (const auto& [key, p] : st.permissions)
    if (key.first == name) mine.insert(key.second);
  return [mine](const std::string& vhost) { return mine.count(vhost) != 0; };
}

template <class Row>
void keep_visible(std::vector<Row>& rows, const std::function<bool(const std::string&)>& visible) {
  rows.erase(
      std::remove_if(rows.begin(), rows.end(), [&](const Row& r) { return !visible(r.vhost); }),
      rows.end());
}

// Why a connection to `vhost` is refused by the vhost's connection limit, or empty.
std::string check_vhost_connections(const node_state& st, const std::string& vhost) {
  auto l = st.limits_of.find(vhost);
  if (l == st.limits_of.end() || l->second.max_connections < 0) return {};
  auto open = std::count_if(st.connection_vhost.begin(), st.connection_vhost.end(),
                            [&](const auto& c) { return c.second == vhost; });
  if (open < l->second.max_connections) return {};
  return "access to vhost " + quote(vhost) + " refused: its connection limit (" +
         std::to_string(l->second.max_connections) + ") is reached";
}

template <class Done>
void persist(self_ptr self, std::vector<persistence::meta_mutation> batch, Done done) {
  warren::persist(self, self->state.storage.persistence, std::move(batch), std::move(done));
}

// Every queue of every vhost, for listings and statistics.
template <class Done>
void all_queues(self_ptr self, Done done) {
  std::vector<caf::actor> vhosts;
  for (const auto& [name, vhost] : self->state.vhosts) vhosts.push_back(vhost);
  gather<std::vector<queue_info>>(
      vhosts,
      [=](const caf::actor& v) {
        return self->request(vhost_handle(v), caf::infinite, list_atom::value, queues_atom::value);
      },
      [=](std::vector<std::vector<queue_info>> parts) mutable {
        std::vector<queue_info> rows;
        for (auto& p : parts) rows.insert(rows.end(), p.begin(), p.end());
        done(std::move(rows));
      });
}

template <class Done>
void all_connections(self_ptr self, Done done) {
  std::vector<caf::actor> conns;
  for (const auto& [addr, conn] : self->state.connections) conns.push_back(conn);
  gather<connection_info>(
      conns,
      [=](const caf::actor& c) {
        return self->request(caf::actor_cast<connection_broker_api>(c), caf::infinite,
                             stats_atom::value);
      },
      std::move(done));
}

// Recreates the vhosts (and everything in them) the metadata store holds.
void restore(self_ptr self, persistence::metadata_contents contents) {
  self->state.limits_of = contents.limits;
  for (auto& u : contents.users) self->state.users[u.name] = std::move(u);
  for (auto& p : contents.permissions) {
    // Stored before patterns were RE2 (lookahead, backreferences): such a pattern matches
    // nothing now, and says so once here.
    for (const auto* pattern : {&p.configure, &p.write, &p.read})
      if (auto problem = check_permission_pattern(*pattern); !problem.empty())
        log(log_level::warn, "node",
            "permissions of user " + quote(p.user) + " in vhost " + quote(p.vhost) + ": " +
                problem + "; it allows nothing until set again");
    self->state.permissions[{p.user, p.vhost}] = std::move(p);
  }
  std::map<std::string, vhost_recovery> by_vhost;
  for (auto& v : contents.vhosts) by_vhost[v];
  for (auto& e : contents.exchanges) by_vhost[e.vhost].exchanges.push_back(std::move(e.spec));
  std::map<uint64_t, std::string> vhost_of_queue;
  for (auto& q : contents.queues) {
    vhost_of_queue[q.id] = q.vhost;
    by_vhost[q.vhost].queues.emplace_back(std::move(q.spec), q.id);
  }
  for (auto& o : contents.stream_offsets)
    if (auto v = vhost_of_queue.find(o.queue_id); v != vhost_of_queue.end())
      by_vhost[v->second].stream_offsets[o.queue_id][o.group] = o.offset;
  for (auto& b : contents.bindings) by_vhost[b.vhost].bindings.push_back(std::move(b.spec));
  for (auto& q : contents.queue_homes) by_vhost[q.vhost].queue_homes.push_back(std::move(q.spec));
  for (auto& [name, recovered] : by_vhost) {
    if (std::find(contents.vhosts.begin(), contents.vhosts.end(), name) == contents.vhosts.end()) {
      log(log_level::warn, "node", "records of unknown vhost " + quote(name) + " ignored");
      continue;
    }
    spawn_vhost(self, name, std::move(recovered));
  }
}

}  // namespace

namespace node_parts {

// Puts `defs`' users, vhosts (with their limits) and permissions into the node's state; returns
// the records to store.
std::vector<persistence::meta_mutation> apply_definitions(self_ptr self, const definitions& defs) {
  auto& st = self->state;
  std::vector<persistence::meta_mutation> batch;
  for (const auto& u : defs.users) {
    st.users[u.name] = u;
    batch.push_back(user_change(u, false));
  }
  for (const auto& v : defs.vhosts) {
    st.limits_of[v.name] = v.limits;
    if (auto existing = st.vhosts.find(v.name); existing != st.vhosts.end())
      self->send(vhost_handle(existing->second), settings_atom::value, v.limits);
    else
      spawn_vhost(self, v.name, {});  // which hands it its limits
    batch.push_back(vhost_record(v.name, false, v.limits));
  }
  for (const auto& p : defs.permissions) {
    st.permissions[{p.user, p.vhost}] = p;
    batch.push_back(permission_change(p, false));
  }
  return batch;
}

}  // namespace node_parts

namespace {

// The management door acting for a user: it may do what the user may, but it is no client
// connection (not listed, not counted, not blocked by the alarm).
caf::result<caf::actor, connection_settings, permission_record, grant_record> connect_internal(
    self_ptr self, client_hello& hello, caf::actor& conn) {
  auto& st = self->state;
  auto v = st.vhosts.find(hello.vhost);
  if (v == st.vhosts.end())
    return make_broker_error(reply_code::not_found, "no vhost " + quote(hello.vhost));
  self->monitor(conn);
  st.connection_user[conn.address()] = hello.user;
  return {v->second, st.settings, st.permissions.at({hello.user, hello.vhost}), grant_record{}};
}

// The management door's basic auth: once the password checks out, the user's tags and the
// vhosts it has permissions in.
caf::result<std::vector<std::string>, std::vector<std::string>> authenticate(
    self_ptr self, const client_hello& hello) {
  auto& st = self->state;
  if (hello.refresh && st.users.count(hello.user) == 0)
    return make_broker_error(reply_code::access_refused,
                             "user " + quote(hello.user) + " no longer exists");
  if (auto refused = hello.refresh ? std::string() : check_login(st, hello); !refused.empty())
    return make_broker_error(reply_code::access_refused, refused);
  std::vector<std::string> vhosts;
  for (const auto& [key, p] : st.permissions)
    if (key.first == hello.user && st.vhosts.count(key.second) != 0) vhosts.push_back(key.second);
  return {st.users.at(hello.user).tags, std::move(vhosts)};
}

caf::result<caf::actor, connection_settings, permission_record, grant_record> connect(
    self_ptr self, client_hello& hello, caf::actor& conn) {
  auto& st = self->state;
  permission_record rights;
  grant_record grant;
  if (!hello.grant_token.empty()) {
    if (auto refused = grant_login(self, hello, rights, grant); !refused.empty())
      return make_broker_error(reply_code::access_refused, refused);
  } else {
    if (auto refused = check_login(st, hello); !refused.empty())
      return make_broker_error(reply_code::access_refused, refused);
    auto found = st.permissions.find({hello.user, hello.vhost});
    if (st.vhosts.count(hello.vhost) != 0 && found == st.permissions.end())
      return make_broker_error(
          reply_code::not_allowed,
          "access to vhost " + quote(hello.vhost) + " refused for user " + quote(hello.user));
    if (hello.internal) return connect_internal(self, hello, conn);
    if (found != st.permissions.end()) rights = found->second;
  }
  if (auto refused = check_vhost_connections(st, hello.vhost); !refused.empty())
    return make_broker_error(reply_code::not_allowed, refused);
  if (st.settings.max_connections != 0 && st.connections.size() >= st.settings.max_connections)
    return make_broker_error(reply_code::not_allowed,
                             "connection refused: the node's connection limit (" +
                                 std::to_string(st.settings.max_connections) + ") is reached");
  auto v = st.vhosts.find(hello.vhost);
  if (v == st.vhosts.end())
    return make_broker_error(reply_code::not_found, "no vhost " + quote(hello.vhost));
  self->monitor(conn);
  st.connections[conn.address()] = conn;
  st.connection_vhost[conn.address()] = hello.vhost;
  st.connection_user[conn.address()] = hello.user;
  if (!hello.grant_token.empty())
    st.connection_grant[conn.address()] = grant_token_hash(hello.grant_token);
  if (st.alarm)
    self->send(caf::actor_cast<resource_alarm_type>(st.alarm), subscribe_atom::value, conn);
  log(log_level::debug, "node",
      "connection " + quote(hello.client_name) + " from " + hello.peer + " to vhost " +
          quote(hello.vhost));
  return {v->second, st.settings, rights, grant};
}

caf::typed_response_promise<std::vector<queue_info>> list_queues(self_ptr self) {
  auto rp = self->make_response_promise<std::vector<queue_info>>();
  all_queues(self, [=](std::vector<queue_info> rows) mutable { rp.deliver(std::move(rows)); });
  return rp;
}

caf::typed_response_promise<std::vector<connection_info>> list_connections(self_ptr self) {
  auto visible = visible_vhosts(self);
  auto rp = self->make_response_promise<std::vector<connection_info>>();
  all_connections(self, [=](std::vector<connection_info> rows) mutable {
    keep_visible(rows, visible);
    rp.deliver(std::move(rows));
  });
  return rp;
}

caf::typed_response_promise<node_stats_info> node_stats(self_ptr self) {
  // Before the promise: making it takes the sender out of the current message.
  auto visible = visible_vhosts(self);
  auto rp = self->make_response_promise<node_stats_info>();
  all_queues(self, [=](std::vector<queue_info> queues) mutable {
    all_connections(self, [=](std::vector<connection_info> conns) mutable {
      node_stats_info info;
      info.uptime_ms = static_cast<uint64_t>(steady_ms() - self->state.started_ms);
      info.rss_bytes = resident_bytes();
      info.memory_bytes = self->state.storage.memory->total();
      keep_visible(queues, visible);
      keep_visible(conns, visible);
      info.queues = std::move(queues);
      info.connections = std::move(conns);
      rp.deliver(std::move(info));
    });
  });
  return rp;
}

// Answered once every vhost's queues have recovered.
caf::typed_response_promise<void> when_ready(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  std::vector<caf::actor> vhosts;
  for (const auto& [name, vhost] : self->state.vhosts) vhosts.push_back(vhost);
  await_all(
      vhosts,
      [=](const caf::actor& v) {
        return self->request(vhost_handle(v), caf::infinite, ready_atom::value);
      },
      [=]() mutable { deliver_unit(rp); });
  return rp;
}

caf::result<definitions> export_definitions(self_ptr self) {
  if (auto err = require_admin(self, "exporting definitions")) return err;
  auto rp = self->make_response_promise<definitions>();
  collect_definitions(self, [=](definitions defs) mutable { rp.deliver(std::move(defs)); });
  return rp;
}

// Users, vhosts and permissions first (stored), then the topology inside the vhosts.
caf::result<void> import_definitions(self_ptr self, const definitions& defs) {
  if (auto err = require_admin(self, "importing definitions")) return err;
  if (auto problem = check_definitions(self->state, defs); !problem.empty())
    return make_broker_error(reply_code::precondition_failed,
                             "definitions not imported: " + problem);
  auto rp = self->make_response_promise<void>();
  access_change shared;
  shared.put.users = defs.users;
  shared.put.vhosts = defs.vhosts;
  shared.put.permissions = defs.permissions;
  share_access(self, std::move(shared));
  // With a metadata log, vhosts, users and permissions are one entry of it; the vhosts run here
  // once it is applied, before the answer, and the topology inside them follows.
  auto here = defs;
  persistence::metadata_entry through_log;
  if (log_backed(self->state)) {
    for (const auto& v : defs.vhosts)
      through_log.changes.push_back(vhost_record(v.name, false, v.limits));
    for (const auto& u : defs.users) through_log.changes.push_back(user_change(u, false));
    for (const auto& p : defs.permissions)
      through_log.changes.push_back(permission_change(p, false));
    here.users.clear();
    here.vhosts.clear();
    here.permissions.clear();
  }
  auto topology = [=](const std::string& log_error) mutable {
    if (!log_error.empty()) {
      rp.deliver(make_broker_error(
          reply_code::resource_error,
          "definitions not imported: vhosts, users and permissions: " + log_error));
      return;
    }
    declare_topology(self, defs, [=](caf::error err) mutable {
      if (err) {
        rp.deliver(err);
        return;
      }
      log(log_level::info, "node",
          "definitions imported: " + std::to_string(defs.users.size()) + " users, " +
              std::to_string(defs.vhosts.size()) + " vhosts, " +
              std::to_string(defs.exchanges.size()) + " exchanges, " +
              std::to_string(defs.queues.size()) + " queues, " +
              std::to_string(defs.bindings.size()) + " bindings");
      deliver_unit(rp);
    });
  };
  persist(self, apply_definitions(self, here), [=](const caf::error& err) mutable {
    if (err) {
      rp.deliver(err);
      return;
    }
    if (through_log.changes.empty()) return topology("");
    propose(self, through_log, topology);
  });
  return rp;
}

// A new data directory starts with the vhost "/"; a data dir without users (new, or from before
// users were stored) gets RabbitMQ's guest, allowed everything in every vhost.
void first_start(self_ptr self, bool fresh) {
  if (fresh) {
    spawn_vhost(self, "/", {});
    persist(self, {vhost_record("/", false)}, [](const caf::error& err) {
      if (err)
        log(log_level::error, "node", "could not store vhost '/': " + to_string(describe(err)));
    });
  }
  if (!self->state.users.empty()) return;
  user_record guest{"guest", hash_password("guest"), {"administrator"}};
  self->state.users[guest.name] = guest;
  std::vector<persistence::meta_mutation> batch{user_change(guest, false)};
  for (const auto& [name, vhost] : self->state.vhosts) {
    permission_record all{"guest", name, ".*", ".*", ".*"};
    self->state.permissions[{"guest", name}] = all;
    batch.push_back(permission_change(all, false));
  }
  persist(self, std::move(batch), [](const caf::error& err) {
    if (err)
      log(log_level::error, "node", "could not store user 'guest': " + to_string(describe(err)));
  });
}

}  // namespace

// Why `hello` may not log in, or empty. One rule for both front doors.
std::string check_login(const node_state& st, const client_hello& hello) {
  if (hello.user.empty()) return "login refused: the user name is empty";
  auto u = st.users.find(hello.user);
  if (u == st.users.end() || !password_matches(u->second.password_hash, hello.password))
    return "login refused for user " + quote(hello.user);
  if (hello.user == "guest" && !hello.loopback)
    return "user 'guest' may only connect from a loopback address";
  return {};
}

namespace {

using text = const std::string&;

node_login_api::behavior_type login_behavior(self_ptr self) {
  return {
      [=](connect_atom, client_hello& hello, caf::actor& conn) {
        return connect(self, hello, conn);
      },
      [=](auth_atom, const client_hello& hello) { return authenticate(self, hello); },
      [=](alarm_atom, const caf::actor& alarm) { self->state.alarm = alarm; },
      [=](cluster_atom, const caf::actor& cluster, text name) { set_cluster(self, cluster, name); },
      [=](settings_atom, const connection_settings& settings) { self->state.settings = settings; },
      [=](ready_atom) { return when_ready(self); },
      [=](metalog_atom, uint64_t token, bool seeded) { use_metadata_log(self, token, seeded); },
      [=](metalog_atom, bool) { cluster_keeps_a_log(self); },
  };
}

node_admin_api::behavior_type admin_behavior(self_ptr self) {
  return {
      [=](declare_atom, user_atom, text name, text password, const std::vector<std::string>& tags) {
        return add_user(self, name, password, tags);
      },
      [=](settings_atom, user_atom, text name, text password) {
        return change_password(self, name, password);
      },
      [=](delete_atom, user_atom, text name) { return delete_user(self, name); },
      [=](list_atom, user_atom) { return list_users(self); },
      [=](sync_atom, metalog_atom) { return sync_metadata(self); },
      [=](declare_atom, permission_atom, const permission_record& p) {
        return set_permissions(self, p);
      },
      [=](delete_atom, permission_atom, text user, text vhost) {
        return clear_permissions(self, user, vhost);
      },
      [=](list_atom, permission_atom) { return list_permissions(self); },
      [=](grant_atom, grant_record& what, int64_t ttl_s) { return mint_grant(self, what, ttl_s); },
      [=](list_atom, grant_atom) { return list_grants(self); },
      [=](revoke_atom, text token) { return revoke_grant(self, token); },
      [=](expire_atom, text hash) { expire_grant(self, hash); },
      [=](declare_atom, vhost_atom, text name) { return add_vhost(self, name); },
      [=](delete_atom, vhost_atom, text name) { return delete_vhost(self, name); },
      [=](list_atom, vhost_atom) { return vhost_names(self->state); },
      [=](settings_atom, vhost_atom, text name, const vhost_limits& limits) {
        return set_vhost_limits(self, name, limits);
      },
      [=](settings_atom, vhost_atom, text name) { return vhost_limits_of(self, name); },
      [=](export_atom) { return export_definitions(self); },
      [=](import_atom, const definitions& defs) { return import_definitions(self, defs); },
      [=](list_atom, queues_atom) { return list_queues(self); },
      [=](list_atom, conns_atom) { return list_connections(self); },
      [=](stats_atom) { return node_stats(self); },
  };
}

}  // namespace

node_actor_type::behavior_type node_actor(node_self self, storage_context storage,
                                          persistence::metadata_contents contents) {
  install_actor_defaults(self, "node");
  self->state.storage = std::move(storage);
  self->state.started_ms = steady_ms();
  bool fresh = contents.fresh;
  restore_grants(self, std::move(contents.grants));
  restore(self, std::move(contents));
  first_start(self, fresh);
  self->set_down_handler([=](caf::down_msg& dm) {
    self->state.connections.erase(dm.source);
    self->state.connection_vhost.erase(dm.source);
    self->state.connection_user.erase(dm.source);
    self->state.connection_grant.erase(dm.source);
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& [name, vhost] : self->state.vhosts) self->send_exit(vhost, msg.reason);
    self->quit(msg.reason);
  });
  return join_parts<node_actor_type, node_login_api, node_cluster_api, node_admin_api>(
      login_behavior(self), cluster_behavior(self), admin_behavior(self));
}

}  // namespace warren
