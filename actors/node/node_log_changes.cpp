// The node's users and permissions when the cluster keeps them in the metadata log (issue 33);
// its vhosts are node_log_vhosts.cpp's.
//
// A change is not made here: it becomes a log entry, with conditions that make it mean the same
// on every member (a user added only if absent, changed only if present), and goes to the
// cluster actor, which has the leader's log commit it. The answer comes once this node applied
// it. What the node holds in memory follows the log alone: every member's log tells its node
// what each applied entry changed (log_applied), in log order, and the node closes the
// connections of users whose access went. So changes made on two members at once, or on a
// member cut off, end the same everywhere: committed in one order, or refused.
#include "actors/node/node_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_log.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <chrono>
#include <iterator>

namespace warren::node_parts {

using persistence::meta_table;

void forget_permission(self_ptr self, const std::string& user, const std::string& vhost) {
  if (self->state.permissions.erase({user, vhost}) == 0) return;
  access_withdrawn(
      self, user, &vhost,
      "the permissions of user " + quote(user) + " in vhost " + quote(vhost) + " were cleared");
}

caf::error log_refusal(const std::string& not_done, const std::string& error,
                       const std::function<caf::error(size_t condition)>& conflict) {
  using persistence::metadata_log;
  if (auto failed = metadata_log::failed_condition(error)) return conflict(*failed);
  bool unstorable = error.rfind(metadata_log::unstorable_change, 0) == 0;  // the caller's input
  return make_broker_error(
      unstorable ? reply_code::precondition_failed : reply_code::resource_error,
      not_done + ": " + error);
}

namespace {

void forget_user(self_ptr self, const std::string& name) {
  if (self->state.users.erase(name) == 0) return;
  log(log_level::info, "node", "user " + quote(name) + " deleted");
  access_withdrawn(self, name, nullptr, "user " + quote(name) + " was deleted");
}

// An exchange key is its vhost's name and its own, joined by a NUL (which no name holds).
std::pair<std::string, std::string> exchange_of_key(const std::string& key) {
  auto cut = key.find('\0');
  if (cut == std::string::npos) return {key, {}};
  return {key.substr(0, cut), key.substr(cut + 1)};
}

// `send` to the actor of `vhost`: now when it runs; once it runs again when it is to restart (a
// deleted vhost added again while its old actor stops), after what was kept for it before. A
// vhost deleted by an earlier entry, and not added again, has no exchanges to follow.
void to_vhost(self_ptr self, const std::string& vhost,
              std::function<void(const caf::actor&)> send) {
  auto& st = self->state;
  if (auto v = st.vhosts.find(vhost); v != st.vhosts.end()) return send(v->second);
  if (st.vhosts_to_restart.count(vhost) != 0)
    st.exchanges_to_replay[vhost].push_back(std::move(send));
}

// A durable exchange the log put or erased goes to its vhost's actor, in log order.
void exchange_changed(self_ptr self, const persistence::meta_mutation& m) {
  auto me = self;
  if (m.erase) {
    auto [vhost, name] = exchange_of_key(m.key);
    return to_vhost(self, vhost, [me, name = name](const caf::actor& v) {
      me->send(vhost_handle(v), applied_atom::value, delete_atom::value, name);
    });
  }
  auto e = persistence::decode_exchange(m.value);
  to_vhost(self, e.vhost, [me, spec = e.spec](const caf::actor& v) {
    me->send(vhost_handle(v), applied_atom::value, spec);
  });
}

// A binding between durable exchanges the log put or erased goes to its vhost, in log order.
void binding_changed(self_ptr self, const persistence::meta_mutation& m) {
  auto me = self;
  if (m.erase) {
    auto vhost = std::string(persistence::parse_binding_key(m.key).vhost);
    return to_vhost(self, vhost, [me, key = m.key](const caf::actor& v) {
      me->send(vhost_handle(v), applied_atom::value, unbind_atom::value, key);
    });
  }
  auto b = persistence::decode_binding(m.value);
  to_vhost(self, b.vhost, [me, spec = b.spec](const caf::actor& v) {
    me->send(vhost_handle(v), applied_atom::value, bind_atom::value, spec);
  });
}

// A durable queue the log put or erased goes to its vhost, in log order: its home starts or
// deletes it, every member knows the name is taken.
void queue_home_changed(self_ptr self, const persistence::meta_mutation& m) {
  auto me = self;
  if (m.erase) {
    auto [vhost, name] = exchange_of_key(m.key);  // a queue key is built the same way
    return to_vhost(self, vhost, [me, name = name](const caf::actor& v) {
      me->send(vhost_handle(v), applied_atom::value, delete_atom::value, queues_atom::value, name);
    });
  }
  auto q = persistence::decode_queue(m.value);
  to_vhost(self, q.vhost, [me, spec = q.spec](const caf::actor& v) {
    me->send(vhost_handle(v), applied_atom::value, spec);
  });
}

// After a seed or a snapshot: every running vhost gets the log's durable exchanges of its own,
// the bindings between them, and its durable queues.
void exchanges_replaced(self_ptr self, const std::vector<persistence::meta_mutation>& records) {
  struct of_one_vhost {
    std::vector<exchange_spec> exchanges;
    std::vector<binding_spec> bindings;
    std::vector<queue_spec> queues;
  };
  std::map<std::string, of_one_vhost> by_vhost;
  for (const auto& m : records)
    if (m.table == meta_table::exchanges) {
      auto e = persistence::decode_exchange(m.value);
      by_vhost[e.vhost].exchanges.push_back(std::move(e.spec));
    } else if (m.table == meta_table::bindings) {
      auto b = persistence::decode_binding(m.value);
      by_vhost[b.vhost].bindings.push_back(std::move(b.spec));
    } else if (m.table == meta_table::queue_homes) {
      auto q = persistence::decode_queue(m.value);
      by_vhost[q.vhost].queues.push_back(std::move(q.spec));
    }
  auto& st = self->state;
  for (const auto& [name, vhost] : st.vhosts) {
    const auto& of = by_vhost[name];
    self->send(vhost_handle(vhost), applied_atom::value, exchanges_atom::value, of.exchanges,
               of.bindings, of.queues);
  }
  // A vhost to restart gets the snapshot's instead of what was kept for it before.
  for (const auto& [name, limits] : st.vhosts_to_restart) {
    auto me = self;
    st.exchanges_to_replay[name] = {[me, of = by_vhost[name]](const caf::actor& v) {
      me->send(vhost_handle(v), applied_atom::value, exchanges_atom::value, of.exchanges,
               of.bindings, of.queues);
    }};
  }
}

// One entry's changes to users, permissions, vhosts, exchanges, bindings and queues, in order.
void apply_changes(self_ptr self, const std::vector<persistence::meta_mutation>& changes) {
  auto& st = self->state;
  for (const auto& m : changes) {
    if (m.table == meta_table::exchanges) {
      exchange_changed(self, m);
    } else if (m.table == meta_table::bindings) {
      binding_changed(self, m);
    } else if (m.table == meta_table::queue_homes) {
      queue_home_changed(self, m);
    } else if (m.table == meta_table::vhosts) {
      if (m.erase) {
        vhost_erased_by_log(self, m.key);
      } else {
        auto v = persistence::decode_vhost(m.value);
        vhost_put_by_log(self, v.name, v.limits);
      }
    } else if (m.table == meta_table::users) {
      if (m.erase) {
        forget_user(self, m.key);
        // As LMDB does when it applies the entry: none of its permissions outlives the user.
        for (auto p = st.permissions.begin(); p != st.permissions.end();)
          p = p->first.first == m.key ? st.permissions.erase(p) : std::next(p);
      } else {
        auto u = persistence::decode_user(m.value);
        auto name = u.name;
        if (!st.users.insert_or_assign(name, std::move(u)).second) continue;
        log(log_level::info, "node", "user " + quote(name) + " added");
      }
    } else if (m.table == meta_table::permissions) {
      if (!m.erase) {
        auto p = persistence::decode_permission(m.value);
        st.permissions[{p.user, p.vhost}] = std::move(p);
        continue;
      }
      for (const auto& [key, p] : st.permissions)
        if (persistence::permission_key(key.first, key.second) == m.key) {
          auto [user, vhost] = key;  // copies: forgetting erases `key`
          forget_permission(self, user, vhost);
          break;
        }
    }
  }
}

// A seed or a snapshot: the log's users, permissions and vhosts replace ours.
void replace_all(self_ptr self, const std::vector<persistence::meta_mutation>& records) {
  auto& st = self->state;
  std::map<std::string, user_record> users;
  std::map<std::pair<std::string, std::string>, permission_record> permissions;
  for (const auto& m : records) {
    if (m.table == meta_table::users) {
      auto u = persistence::decode_user(m.value);
      users[u.name] = std::move(u);
    } else if (m.table == meta_table::permissions) {
      auto p = persistence::decode_permission(m.value);
      permissions[{p.user, p.vhost}] = std::move(p);
    }
  }
  std::vector<std::string> users_gone;
  for (const auto& [name, u] : st.users)
    if (users.count(name) == 0) users_gone.push_back(name);
  std::vector<std::pair<std::string, std::string>> permissions_gone;
  for (const auto& [key, p] : st.permissions)
    if (permissions.count(key) == 0 && users.count(key.first) != 0) permissions_gone.push_back(key);
  for (const auto& name : users_gone) forget_user(self, name);
  for (const auto& [user, vhost] : permissions_gone) forget_permission(self, user, vhost);
  st.users = std::move(users);
  st.permissions = std::move(permissions);
  vhosts_replaced_by_log(self, records);
  exchanges_replaced(self, records);
}

}  // namespace

// Only once this node's log holds the cluster's users (seeded here, or from a seed or snapshot
// it applied): until then (a member joining, or a cluster whose log never formed) users and
// permissions go the old way, so that none is lost to a log that cannot take it.
bool log_backed(const node_state& st) {
  return st.log_token != 0 && (st.log_seeded || st.cluster_has_log);
}

bool users_from_log_only(const node_state& st) {
  return st.log_token != 0 && st.log_seeded;
}

void strip_log_owned(access_change& change) {
  change.put.users.clear();
  change.put.permissions.clear();
  change.put.vhosts.clear();
  change.users_deleted.clear();
  change.permissions_cleared.clear();
  change.vhosts_deleted.clear();
}

void propose(self_ptr self, persistence::metadata_entry entry,
             std::function<void(const std::string& error)> done) {
  if (!self->state.cluster) return done("this node has no cluster actor yet");
  // The cluster actor answers within its own bounds (a forward, then this node's apply); this
  // one only ends a wait on a cluster actor that is gone.
  self->request(cluster_handle(self->state.cluster), std::chrono::minutes(2), propose_atom::value,
                self->state.log_token, persistence::encode_metadata_entry(entry))
      .then([=](std::string& error) { done(error); },
            [=](caf::error& err) { done(to_string(describe(err))); });
}

caf::result<void> change_through_log(self_ptr self, persistence::metadata_entry entry,
                                     std::function<caf::error(size_t condition)> conflict) {
  auto rp = self->make_response_promise<void>();
  propose(self, std::move(entry), [=](const std::string& error) mutable {
    if (error.empty())
      deliver_unit(rp);
    else
      rp.deliver(log_refusal("metadata change not made", error, conflict));
  });
  return rp;
}

void sync_then(self_ptr self, std::function<void(const std::string& error)> done) {
  if (!log_backed(self->state) || !self->state.cluster) return done("");
  self->request(cluster_handle(self->state.cluster), std::chrono::minutes(2), sync_atom::value,
                self->state.log_token)
      .then([=](std::string& error) { done(error); },
            [=](caf::error& err) { done(to_string(describe(err))); });
}

caf::result<void> sync_metadata(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  sync_then(self, [=](const std::string& error) mutable {
    if (error.empty())
      deliver_unit(rp);
    else
      rp.deliver(make_broker_error(reply_code::resource_error, "metadata not synced: " + error));
  });
  return rp;
}

void log_applied(self_ptr self, uint64_t token,
                 const std::vector<persistence::meta_mutation>& changes, bool whole) {
  if (token == 0 || token != self->state.log_token) return;
  try {
    if (whole) {
      replace_all(self, changes);
      if (!self->state.log_seeded)
        log(log_level::info, "node",
            "users, permissions and vhosts follow the metadata log from now on");
      self->state.log_seeded = true;
      vhosts_follow_log(self);
    } else {
      apply_changes(self, changes);
    }
  } catch (const std::exception& e) {
    // The log checked every value as LMDB reads it back: this is a bug, not a peer's doing.
    log(log_level::error, "node", std::string("a metadata log change not taken: ") + e.what());
  }
}

void cluster_keeps_a_log(self_ptr self) {
  self->state.cluster_has_log = true;
  vhosts_follow_log(self);
}

void use_metadata_log(self_ptr self, uint64_t token, bool seeded) {
  if (self->state.log_token != 0) return;  // set once, by warren-node, before the cluster
  self->state.log_token = token;
  self->state.log_seeded = seeded;
  vhosts_follow_log(self);
}

caf::result<std::string> propose_for_vhost(self_ptr self, const std::string& bytes) {
  // Only this node's vhosts: a member proposes through its own node.
  const auto& sender = self->current_sender();
  if (!sender || sender->node() != self->node()) return std::string("not from this node");
  persistence::metadata_entry entry;
  try {
    entry = persistence::decode_metadata_entry(bytes);
  } catch (const std::exception& e) {
    return std::string("not a metadata log entry: ") + e.what();
  }
  // A vhost changes its durable exchanges, the bindings between them and its durable queues'
  // records, on condition of its vhost, exchanges, bindings and queues, nothing else.
  for (const auto& m : entry.changes)
    if (m.table != meta_table::exchanges && m.table != meta_table::queue_homes &&
        !(m.table == meta_table::bindings && persistence::lmdb_store::in_log(m.table, m.key)))
      return std::string("not a change of an exchange, a queue or a binding between exchanges");
  for (const auto& c : entry.conditions)
    if (c.table != meta_table::exchanges && c.table != meta_table::vhosts &&
        c.table != meta_table::bindings && c.table != meta_table::queue_homes)
      return std::string("not a condition on an exchange, a queue, a binding or a vhost");
  auto rp = self->make_response_promise<std::string>();
  propose(self, std::move(entry), [=](const std::string& error) mutable { rp.deliver(error); });
  return rp;
}

void replay_exchanges(self_ptr self, const std::string& vhost) {
  auto& st = self->state;
  auto kept = st.exchanges_to_replay.find(vhost);
  if (kept == st.exchanges_to_replay.end()) return;
  auto sends = std::move(kept->second);
  st.exchanges_to_replay.erase(kept);
  if (auto v = st.vhosts.find(vhost); v != st.vhosts.end())
    for (auto& send : sends) send(v->second);
}

void vhosts_follow_log(self_ptr self, const caf::actor* only) {
  if (!log_backed(self->state)) return;
  auto me = caf::actor_cast<caf::actor>(self);
  if (only != nullptr) return self->send(vhost_handle(*only), applied_atom::value, me);
  for (const auto& [name, vhost] : self->state.vhosts)
    self->send(vhost_handle(vhost), applied_atom::value, me);
}

}  // namespace warren::node_parts
