// warrenctl's definitions commands: export-definitions and import-definitions, in RabbitMQ's
// definitions JSON (users with password hashes, vhosts, permissions, exchanges, queues,
// bindings, and vhost limits as "vhost-limits" parameters), so a setup moves between RabbitMQ
// and Warren both ways. Both need a user tagged administrator.
#pragma once

#include "core/definitions_json.hpp"
#include "warren/connection.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace warrenctl {

using warren::definitions_from_json;
using warren::definitions_to_json;

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
