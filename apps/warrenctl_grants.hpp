// warrenctl's capability grants: grant publisher|consumer TARGET (prints the token),
// revoke-grant TOKEN; `list grants` is among the listings.
#pragma once

#include "warren/connection.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace warrenctl {

class grant_commands {
 public:
  explicit grant_commands(CLI::App& app);
  /// Carries out `cmd` if it is one of these; false when it is not.
  bool run(const CLI::App* cmd, warren::client::connection& conn, bool as_json);

 private:
  std::string kind_, target_, key_, token_;
  uint64_t ttl_ = 0;
  CLI::App *grant_ = nullptr, *revoke_ = nullptr;
};

}  // namespace warrenctl
