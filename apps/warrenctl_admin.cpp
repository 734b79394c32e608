#include "apps/warrenctl_admin.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace warrenctl {

using json = nlohmann::json;

admin_commands::admin_commands(CLI::App& app) {
  perm_.vhost = "/";
  add_vhost_commands(app);
  add_user_commands(app);
  add_permission_commands(app);
  add_cluster_commands(app);
}

void admin_commands::add_cluster_commands(CLI::App& app) {
  forget_node_ = app.add_subcommand(
      "forget-node", "remove a node that is down from the cluster, for good (administrator)");
  forget_node_->add_option("NAME", name_, "as `list nodes` shows it")->required();
}

void admin_commands::add_vhost_commands(CLI::App& app) {
  add_vhost_ = app.add_subcommand("add-vhost", "add a virtual host");
  add_vhost_->add_option("NAME", name_)->required();
  delete_vhost_ = app.add_subcommand("delete-vhost", "delete a virtual host and all in it");
  delete_vhost_->add_option("NAME", name_)->required();
  set_limits_ = app.add_subcommand("set-vhost-limits",
                                   "set a vhost's limits (negative or left out = no limit)");
  set_limits_->add_option("NAME", name_)->required();
  set_limits_->add_option("--max-connections", limits_.max_connections, "connections at once");
  set_limits_->add_option("--max-queues", limits_.max_queues, "queues in the vhost");
  show_limits_ = app.add_subcommand("vhost-limits", "show a vhost's limits");
  show_limits_->add_option("NAME", name_)->required();
}

void admin_commands::add_user_commands(CLI::App& app) {
  add_user_ = app.add_subcommand("add-user", "add a user (administrator only)");
  add_user_->add_option("NAME", name_)->required();
  add_user_->add_option("PASSWORD", password_)->required();
  add_user_->add_option("--tags", tags_, "administrator, monitoring, management")->delimiter(',');
  change_password_ =
      app.add_subcommand("change-password", "set a user's password (administrator only)");
  change_password_->add_option("NAME", name_)->required();
  change_password_->add_option("PASSWORD", password_)->required();
  delete_user_ = app.add_subcommand("delete-user", "delete a user (administrator only)");
  delete_user_->add_option("NAME", name_)->required();
  list_users_ = app.add_subcommand("list-users", "users and their tags (administrator only)");
}

void admin_commands::add_permission_commands(CLI::App& app) {
  set_perms_ = app.add_subcommand(
      "set-permissions", "a user's configure / write / read patterns in a vhost (administrator)");
  set_perms_->add_option("USER", perm_.user)->required();
  set_perms_->add_option("CONFIGURE", perm_.configure)->required();
  set_perms_->add_option("WRITE", perm_.write)->required();
  set_perms_->add_option("READ", perm_.read)->required();
  set_perms_->add_option("--vhost", perm_.vhost, "the vhost (default /)");
  clear_perms_ = app.add_subcommand("clear-permissions",
                                    "take a user's permissions in a vhost (administrator)");
  clear_perms_->add_option("USER", perm_.user)->required();
  clear_perms_->add_option("--vhost", perm_.vhost, "the vhost (default /)");
  list_perms_ = app.add_subcommand("list-permissions", "every user's permissions (administrator)");
}

bool admin_commands::run(const CLI::App* cmd, warren::client::connection& conn, bool as_json) {
  if (cmd == add_vhost_)
    conn.add_vhost(name_);
  else if (cmd == delete_vhost_)
    conn.delete_vhost(name_);
  else if (cmd == set_limits_)
    conn.set_vhost_limits(name_, limits_);
  else if (cmd == show_limits_)
    print_limits(conn, as_json);
  else if (cmd == add_user_)
    conn.add_user(name_, password_, tags_);
  else if (cmd == change_password_)
    conn.change_password(name_, password_);
  else if (cmd == delete_user_)
    conn.delete_user(name_);
  else if (cmd == list_users_)
    print_users(conn, as_json);
  else if (cmd == set_perms_)
    conn.set_permissions(perm_);
  else if (cmd == clear_perms_)
    conn.clear_permissions(perm_.user, perm_.vhost);
  else if (cmd == list_perms_)
    print_permissions(conn, as_json);
  else if (cmd == forget_node_)
    conn.forget_node(name_);
  else
    return false;
  return true;
}

void admin_commands::print_limits(warren::client::connection& conn, bool as_json) {
  auto l = conn.get_vhost_limits(name_);
  if (as_json)
    std::cout << json{{"max-connections", l.max_connections}, {"max-queues", l.max_queues}} << '\n';
  else
    std::cout << "max-connections " << l.max_connections << "\nmax-queues " << l.max_queues << '\n';
}

void admin_commands::print_users(warren::client::connection& conn, bool as_json) {
  auto users = conn.list_users();
  if (as_json) {
    json out = json::array();
    for (const auto& u : users) out.push_back(json{{"name", u.name}, {"tags", u.tags}});
    std::cout << out.dump() << '\n';
    return;
  }
  for (const auto& u : users) {
    std::cout << u.name;
    for (size_t i = 0; i < u.tags.size(); ++i) std::cout << (i == 0 ? "  " : ",") << u.tags[i];
    std::cout << '\n';
  }
}

void admin_commands::print_permissions(warren::client::connection& conn, bool as_json) {
  json out = json::array();
  for (const auto& p : conn.list_permissions()) {
    if (as_json)
      out.push_back(json{{"user", p.user},
                         {"vhost", p.vhost},
                         {"configure", p.configure},
                         {"write", p.write},
                         {"read", p.read}});
    else
      std::cout << p.user << "  " << p.vhost << "  " << p.configure << "  " << p.write << "  "
                << p.read << '\n';
  }
  if (as_json) std::cout << out.dump() << '\n';
}

}  // namespace warrenctl
