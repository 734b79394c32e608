// warrenctl's administration commands: vhosts and their limits, users, permissions. Most need
// a user tagged administrator; the node refuses the others with ACCESS_REFUSED.
#pragma once

#include "warren/connection.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace warrenctl {

class admin_commands {
 public:
  /// Adds the subcommands to `app`.
  explicit admin_commands(CLI::App& app);

  /// Carries out `cmd` if it is one of these; false when it is not.
  bool run(const CLI::App* cmd, warren::client::connection& conn, bool as_json);

 private:
  void add_vhost_commands(CLI::App& app);
  void add_user_commands(CLI::App& app);
  void add_permission_commands(CLI::App& app);
  void add_cluster_commands(CLI::App& app);
  void print_users(warren::client::connection& conn, bool as_json);
  void print_permissions(warren::client::connection& conn, bool as_json);
  void print_limits(warren::client::connection& conn, bool as_json);

  std::string name_, password_;
  std::vector<std::string> tags_;
  warren::vhost_limits limits_;
  warren::permission_record perm_;
  CLI::App *add_vhost_ = nullptr, *delete_vhost_ = nullptr, *set_limits_ = nullptr,
           *show_limits_ = nullptr, *add_user_ = nullptr, *change_password_ = nullptr,
           *delete_user_ = nullptr, *list_users_ = nullptr, *set_perms_ = nullptr,
           *clear_perms_ = nullptr, *list_perms_ = nullptr, *forget_node_ = nullptr;
};

}  // namespace warrenctl
