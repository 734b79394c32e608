// The node's users and permissions: added, changed, deleted and listed by administrators, each
// change answered once it is stored. In a cluster with a metadata log each change is a log entry
// instead (node_log_changes.cpp), answered once this node applied it.
#include "actors/node/node_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/node/permissions.hpp"
#include "actors/node/users.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

namespace warren::node_parts {

namespace {

access_change user_put(const user_record& u) {
  access_change shared;
  shared.put.users.push_back(u);
  return shared;
}

persistence::meta_condition user_is(const std::string& name, bool present) {
  return {persistence::meta_table::users, persistence::user_key(name), present};
}

caf::error user_exists(const std::string& name) {
  return make_broker_error(reply_code::precondition_failed,
                           "user " + quote(name) + " already exists");
}

caf::error no_user(const std::string& name) {
  return make_broker_error(reply_code::not_found, "no user " + quote(name));
}

}  // namespace

caf::result<void> add_user(self_ptr self, const std::string& name, const std::string& password,
                           const std::vector<std::string>& tags) {
  if (auto err = require_admin(self, "adding a user")) return err;
  if (auto problem = check_name("user name", name); !problem.empty())
    return make_broker_error(reply_code::precondition_failed, problem);
  if (password.empty())
    return make_broker_error(reply_code::precondition_failed,
                             "user " + quote(name) + " needs a password");
  if (self->state.users.count(name) != 0)
    return make_broker_error(reply_code::precondition_failed,
                             "user " + quote(name) + " already exists");
  user_record u{name, hash_password(password), tags};
  if (log_backed(self->state))
    return change_through_log(self, {{user_change(u, false)}, {user_is(name, false)}},
                              [name](size_t) { return user_exists(name); });
  self->state.users[name] = u;
  log(log_level::info, "node", "user " + quote(name) + " added");
  share_access(self, user_put(u));
  return store(self, {user_change(u, false)});
}

caf::result<void> change_password(self_ptr self, const std::string& name,
                                  const std::string& password) {
  if (auto err = require_admin(self, "changing a password")) return err;
  auto u = self->state.users.find(name);
  if (u == self->state.users.end())
    return make_broker_error(reply_code::not_found, "no user " + quote(name));
  if (password.empty())
    return make_broker_error(reply_code::precondition_failed,
                             "user " + quote(name) + " needs a password");
  if (log_backed(self->state)) {
    auto changed = u->second;
    changed.password_hash = hash_password(password);
    return change_through_log(self, {{user_change(changed, false)}, {user_is(name, true)}},
                              [name](size_t) { return no_user(name); });
  }
  u->second.password_hash = hash_password(password);
  share_access(self, user_put(u->second));
  return store(self, {user_change(u->second, false)});
}

caf::result<void> delete_user(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "deleting a user")) return err;
  auto u = self->state.users.find(name);
  if (u == self->state.users.end())
    return make_broker_error(reply_code::not_found, "no user " + quote(name));
  auto gone = u->second;
  if (log_backed(self->state)) {
    std::vector<persistence::meta_mutation> changes{user_change(gone, true)};
    for (const auto& [key, p] : self->state.permissions)
      if (key.first == name) changes.push_back(permission_change(p, true));
    return change_through_log(self, {std::move(changes), {user_is(name, true)}},
                              [name](size_t) { return no_user(name); });
  }
  self->state.users.erase(u);
  std::vector<persistence::meta_mutation> batch{user_change(gone, true)};
  forget_permissions(self->state, batch, [&](const auto& key) { return key.first == name; });
  log(log_level::info, "node", "user " + quote(name) + " deleted");
  access_withdrawn(self, name, nullptr, "user " + quote(name) + " was deleted");
  access_change shared;
  shared.users_deleted.push_back(name);
  share_access(self, std::move(shared));
  return store(self, std::move(batch));
}

caf::result<std::vector<user_record>> list_users(self_ptr self) {
  if (auto err = require_admin(self, "listing users")) return err;
  std::vector<user_record> out;
  for (const auto& [name, u] : self->state.users) out.push_back({name, {}, u.tags});
  return out;
}

caf::result<void> set_permissions(self_ptr self, const permission_record& p) {
  if (auto err = require_admin(self, "setting permissions")) return err;
  if (self->state.users.count(p.user) == 0)
    return make_broker_error(reply_code::not_found, "no user " + quote(p.user));
  if (self->state.vhosts.count(p.vhost) == 0)
    return make_broker_error(reply_code::not_found, "no vhost " + quote(p.vhost));
  for (const auto* pattern : {&p.configure, &p.write, &p.read})
    if (auto problem = check_permission_pattern(*pattern); !problem.empty())
      return make_broker_error(reply_code::precondition_failed, problem);
  if (log_backed(self->state))
    return change_through_log(self, {{permission_change(p, false)}, {user_is(p.user, true)}},
                              [user = p.user](size_t) { return no_user(user); });
  self->state.permissions[{p.user, p.vhost}] = p;
  access_change shared;
  shared.put.permissions.push_back(p);
  share_access(self, std::move(shared));
  return store(self, {permission_change(p, false)});
}

caf::result<void> clear_permissions(self_ptr self, const std::string& user,
                                    const std::string& vhost) {
  if (auto err = require_admin(self, "clearing permissions")) return err;
  auto p = self->state.permissions.find({user, vhost});
  if (p == self->state.permissions.end()) return caf::unit;
  auto gone = p->second;
  if (log_backed(self->state))
    return change_through_log(self, {{permission_change(gone, true)}, {}},
                              [](size_t) { return caf::error{}; });
  self->state.permissions.erase(p);
  access_withdrawn(
      self, user, &vhost,
      "the permissions of user " + quote(user) + " in vhost " + quote(vhost) + " were cleared");
  access_change shared;
  shared.permissions_cleared.push_back(gone);
  share_access(self, std::move(shared));
  return store(self, {permission_change(gone, true)});
}

caf::result<std::vector<permission_record>> list_permissions(self_ptr self) {
  if (auto err = require_admin(self, "listing permissions")) return err;
  std::vector<permission_record> out;
  for (const auto& [key, p] : self->state.permissions) out.push_back(p);
  return out;
}

}  // namespace warren::node_parts
