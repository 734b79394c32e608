// warrenctl's definitions commands: export-definitions and import-definitions, in RabbitMQ's
// definitions JSON (users with password hashes, vhosts, permissions, exchanges, queues,
// bindings, and vhost limits as "vhost-limits" parameters), so a setup moves between RabbitMQ
// and Warren both ways. Both need a user tagged administrator.
#pragma once

#include "warren/connection.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace warrenctl {

/// The definitions as RabbitMQ writes them.
nlohmann::json definitions_to_json(const warren::definitions& defs);

/// RabbitMQ's definitions JSON read back; throws std::invalid_argument naming the entry that is
/// wrong (its section and position). Sections Warren has no use for (policies, parameters other
/// than vhost limits, topic permissions) are left out; `skipped` counts their entries.
warren::definitions definitions_from_json(const nlohmann::json& j, size_t& skipped);

class definitions_commands {
 public:
  explicit definitions_commands(CLI::App& app);

  /// Carries out `cmd` if it is one of these; false when it is not. Throws std::runtime_error
  /// for an unreadable or invalid file.
  bool run(const CLI::App* cmd, warren::client::connection& conn);

 private:
  std::string file_;
  CLI::App *export_ = nullptr, *import_ = nullptr;
};

}  // namespace warrenctl
