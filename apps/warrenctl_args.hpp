// warrenctl's typed KEY=VALUE arguments (--arg, --header) and its usage error (exit code 2).
#pragma once

#include "warren/types.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace warrenctl {

/// A mistake on the command line found after parsing; warrenctl exits with 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "KEY=VALUE" items into a table; a value is an integer, true/false, or else text. `what`
/// names the option in the usage error for an item without "=".
warren::client::field_table parse_assignments(const std::vector<std::string>& items,
                                              const char* what);

}  // namespace warrenctl
