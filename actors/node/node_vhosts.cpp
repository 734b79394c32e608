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
}

persistence::meta_mutation vhost_record(const std::string& name, bool erase,
                                        const vhost_limits& limits) {
  return {persistence::meta_table::vhosts, persistence::vhost_key(name),
          erase ? std::string() : persistence::encode_vhost(name, limits), erase};
}

// Stops the vhost (its queues' messages and its records go), then forgets its permissions.
void drop_vhost(self_ptr self, const std::string& name, bool with_permissions,
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
    if (err) {
      done(err);
      return;
    }
    std::vector<persistence::meta_mutation> batch{vhost_record(name, true)};
    if (with_permissions)
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

// The creator's permissions go through the log first: on a minority nothing is added. Then the
// vhost is started, shared and stored as without a log.
caf::result<void> add_vhost_through_log(self_ptr self, const std::string& name,
                                        const permission_record& creator) {
  auto rp = self->make_response_promise<void>();
  auto create = [=]() mutable {
    if (self->state.vhosts.count(name) == 0) {  // an add of the same name may have come first
      spawn_vhost(self, name, {});
      log(log_level::info, "node", "vhost " + quote(name) + " added");
    }
    access_change shared;
    shared.put.vhosts.push_back({name, {}});
    share_access(self, std::move(shared));
    warren::persist(self, self->state.storage.persistence, {vhost_record(name, false)},
                    [=](const caf::error& err) mutable {
                      if (err)
                        rp.deliver(err);
                      else
                        deliver_unit(rp);
                    });
  };
  if (creator.user.empty()) {  // the node's own asker: no one to grant
    create();
    return rp;
  }
  persistence::metadata_entry grant{
      {permission_change(creator, false)},
      {{persistence::meta_table::users, persistence::user_key(creator.user), true}}};
  propose(self, grant, [=](const std::string& error) mutable {
    if (error.empty()) return create();
    if (persistence::metadata_log::failed_condition(error)) {
      rp.deliver(make_broker_error(
          reply_code::not_found,
          "vhost " + quote(name) + " not added: user " + quote(creator.user) + " was deleted"));
      return;
    }
    rp.deliver(make_broker_error(reply_code::resource_error,
                                 "vhost " + quote(name) + " not added: " + error));
  });
  return rp;
}

// The permissions of a vhost this node is deleting, dropped through the log before it goes.
void drop_permissions_through_log(self_ptr self, const std::string& vhost,
                                  std::function<void(caf::error)> done) {
  std::vector<persistence::meta_mutation> gone;
  for (const auto& [key, p] : self->state.permissions)
    if (key.second == vhost) gone.push_back(permission_change(p, true));
  if (gone.empty()) return done(caf::error{});
  propose(self, {std::move(gone), {}}, [=](const std::string& error) {
    if (error.empty()) return done(caf::error{});
    done(make_broker_error(reply_code::resource_error,
                           "vhost " + quote(vhost) + " not deleted: " + error));
  });
}

}  // namespace

caf::result<void> add_vhost(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "adding a vhost")) return err;
  if (auto problem = check_name("vhost name", name); !problem.empty())
    return make_broker_error(reply_code::precondition_failed, problem);
  if (self->state.vhosts.count(name) != 0) return caf::unit;
  // Its creator may use it, as with RabbitMQ's management interface.
  permission_record all{requester(self), name, ".*", ".*", ".*"};
  if (log_backed(self->state)) return add_vhost_through_log(self, name, all);
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
  if (self->state.vhosts.count(name) == 0)
    return make_broker_error(reply_code::not_found, "no vhost " + quote(name));
  auto rp = self->make_response_promise<void>();
  // Decided once: the node may start using the log while the vhost stops (a member met).
  bool through_log = log_backed(self->state);
  auto drop = [=]() mutable {
    drop_vhost(self, name, !through_log, [=](const caf::error& err) mutable {
      if (err) {
        rp.deliver(err);
        return;
      }
      share_access(self, vhost_deleted(name));
      deliver_unit(rp);
    });
  };
  if (!through_log) {
    drop();
    return rp;
  }
  drop_permissions_through_log(self, name, [=](caf::error err) mutable {
    if (err)
      rp.deliver(err);
    else
      drop();
  });
  return rp;
}

caf::result<void> set_vhost_limits(self_ptr self, const std::string& name,
                                   const vhost_limits& limits) {
  if (auto err = require_admin(self, "setting vhost limits")) return err;
  auto v = self->state.vhosts.find(name);
  if (v == self->state.vhosts.end())
    return make_broker_error(reply_code::not_found, "no vhost " + quote(name));
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
