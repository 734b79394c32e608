// The node's vhosts: each a vhost actor spawned here, with its record and limits in LMDB. Adding,
// deleting and limiting them is for administrators; the change goes to every cluster member.
#include "actors/node/node_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/node/permissions.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/vhost/vhost_actor.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"

namespace warren::node_parts {

void spawn_vhost(self_ptr self, const std::string& name, vhost_recovery recovered) {
  auto vhost = caf::actor_cast<caf::actor>(
      self->spawn(vhost_actor, name, self->state.storage, std::move(recovered)));
  if (auto l = self->state.limits_of.find(name); l != self->state.limits_of.end())
    self->send(vhost_handle(vhost), settings_atom::value, l->second);
  if (self->state.cluster)
    self->send(vhost_handle(vhost), cluster_atom::value, self->state.cluster,
               self->state.node_name);
  self->state.vhosts[name] = vhost;
  vhosts_follow_log(self, &vhost);
}

persistence::meta_mutation vhost_record(const std::string& name, bool erase,
                                        const vhost_limits& limits) {
  return {persistence::meta_table::vhosts, persistence::vhost_key(name),
          erase ? std::string() : persistence::encode_vhost(name, limits), erase};
}

// Stops the vhost (its queues' messages and its records go), then forgets its permissions.
void drop_vhost(self_ptr self, const std::string& name, bool stored_here,
                std::function<void(caf::error)> done) {
  auto v = self->state.vhosts.find(name);
  if (v == self->state.vhosts.end()) {
    done(caf::error{});
    return;
  }
  auto vhost = v->second;
  self->state.vhosts.erase(v);
  self->state.limits_of.erase(name);
  auto finish = [=](const caf::error& err) mutable {
    if (err || !stored_here) {
      done(err);
      return;
    }
    std::vector<persistence::meta_mutation> batch{vhost_record(name, true)};
    forget_permissions(self->state, batch, [&](const auto& key) { return key.second == name; });
    warren::persist(self, self->state.storage.persistence, std::move(batch),
                    [=](const caf::error& err) mutable {
                      if (!err) log(log_level::info, "node", "vhost " + quote(name) + " deleted");
                      done(err);
                    });
  };
  self->request(vhost_handle(vhost), caf::infinite, shutdown_atom::value)
      .then([=]() mutable { finish(caf::error{}); }, [=](caf::error& err) mutable { finish(err); });
}

namespace {

using persistence::meta_table;

caf::error no_vhost(const std::string& name) {
  return make_broker_error(reply_code::not_found, "no vhost " + quote(name));
}

// One entry: the vhost if it is absent, with its creator's permissions if the creator is still
// a user. The vhost starts here when this node applies it, before the answer.
caf::result<void> add_vhost_through_log(self_ptr self, const std::string& name,
                                        const permission_record& creator) {
  persistence::metadata_entry entry{{vhost_record(name, false)},
                                    {{meta_table::vhosts, persistence::vhost_key(name), false}}};
  if (!creator.user.empty()) {  // the node's own asker: no one to grant
    entry.changes.push_back(permission_change(creator, false));
    entry.conditions.push_back({meta_table::users, persistence::user_key(creator.user), true});
  }
  auto rp = self->make_response_promise<void>();
  propose(self, entry, [=](const std::string& error) mutable {
    // Condition 0 failed: made meanwhile on a member, which is as idempotent as here.
    auto failed = persistence::metadata_log::failed_condition(error);
    if (error.empty() || (failed && *failed == 0)) return deliver_unit(rp);
    rp.deliver(log_refusal("vhost " + quote(name) + " not added", error, [&](size_t) {
      return make_broker_error(reply_code::not_found, "vhost " + quote(name) + " not added: user " +
                                                          quote(creator.user) + " was deleted");
    }));
  });
  return rp;
}

// One entry deletes the vhost, its permissions and its records on every member; answered once
// its actor here has stopped, so that nothing of it is left when the caller goes on.
caf::result<void> delete_vhost_through_log(self_ptr self, const std::string& name) {
  persistence::metadata_entry entry{{vhost_record(name, true)},
                                    {{meta_table::vhosts, persistence::vhost_key(name), true}}};
  auto rp = self->make_response_promise<void>();
  propose(self, entry, [=](const std::string& error) mutable {
    if (error.empty()) return when_vhost_stopped(self, name, [=]() mutable { deliver_unit(rp); });
    rp.deliver(log_refusal("vhost " + quote(name) + " not deleted", error,
                           [&](size_t) { return no_vhost(name); }));
  });
  return rp;
}

caf::result<void> set_limits_through_log(self_ptr self, const std::string& name,
                                         const vhost_limits& limits) {
  persistence::metadata_entry entry{{vhost_record(name, false, limits)},
                                    {{meta_table::vhosts, persistence::vhost_key(name), true}}};
  auto rp = self->make_response_promise<void>();
  propose(self, entry, [=](const std::string& error) mutable {
    if (error.empty()) return deliver_unit(rp);
    rp.deliver(log_refusal("vhost " + quote(name) + " limits not set", error,
                           [&](size_t) { return no_vhost(name); }));
  });
  return rp;
}

}  // namespace

caf::result<void> add_vhost(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "adding a vhost")) return err;
  if (auto problem = check_name("vhost name", name); !problem.empty())
    return make_broker_error(reply_code::precondition_failed, problem);
  // Its creator may use it, as with RabbitMQ's management interface.
  permission_record all{requester(self), name, ".*", ".*", ".*"};
  // Through the log, the log's state decides, not this node's, which may lag it.
  if (log_backed(self->state)) return add_vhost_through_log(self, name, all);
  if (self->state.vhosts.count(name) != 0) return caf::unit;
  spawn_vhost(self, name, {});
  log(log_level::info, "node", "vhost " + quote(name) + " added");
  self->state.permissions[{all.user, name}] = all;
  access_change shared;
  shared.put.vhosts.push_back({name, {}});
  shared.put.permissions.push_back(all);
  share_access(self, std::move(shared));
  return store(self, {vhost_record(name, false), permission_change(all, false)});
}

caf::result<void> delete_vhost(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "deleting a vhost")) return err;
  // A name no vhost can have is not there, whichever way vhosts are kept.
  if (!check_name("vhost name", name).empty()) return no_vhost(name);
  if (log_backed(self->state)) return delete_vhost_through_log(self, name);
  if (self->state.vhosts.count(name) == 0) return no_vhost(name);
  auto rp = self->make_response_promise<void>();
  drop_vhost(self, name, true, [=](const caf::error& err) mutable {
    if (err) {
      rp.deliver(err);
      return;
    }
    share_access(self, vhost_deleted(name));
    deliver_unit(rp);
  });
  return rp;
}

caf::result<void> set_vhost_limits(self_ptr self, const std::string& name,
                                   const vhost_limits& limits) {
  if (auto err = require_admin(self, "setting vhost limits")) return err;
  // A name no vhost can have is not there, whichever way vhosts are kept.
  if (!check_name("vhost name", name).empty()) return no_vhost(name);
  if (log_backed(self->state)) return set_limits_through_log(self, name, limits);
  auto v = self->state.vhosts.find(name);
  if (v == self->state.vhosts.end()) return no_vhost(name);
  self->state.limits_of[name] = limits;
  self->send(vhost_handle(v->second), settings_atom::value, limits);
  access_change shared;
  shared.put.vhosts.push_back({name, limits});
  share_access(self, std::move(shared));
  return store(self, {vhost_record(name, false, limits)});
}

caf::result<vhost_limits> vhost_limits_of(self_ptr self, const std::string& name) {
  if (self->state.vhosts.count(name) == 0)
    return make_broker_error(reply_code::not_found, "no vhost " + quote(name));
  auto l = self->state.limits_of.find(name);
  return l == self->state.limits_of.end() ? vhost_limits{} : l->second;
}

std::vector<std::string> vhost_names(const node_state& st) {
  std::vector<std::string> names;
  for (const auto& [name, vhost] : st.vhosts) names.push_back(name);
  return names;
}

}  // namespace warren::node_parts
