// Leveled, line-oriented logging to stderr: "2026-11-30T14:00:00.123Z INFO  node: text".
// Thread-safe; a line is written with one call so lines from threads never interleave.
#pragma once

#include <string>
#include <string_view>

namespace warren {

enum class log_level { error, warn, info, debug };

/// Parses error|warn|info|debug; false on anything else.
bool parse_log_level(std::string_view text, log_level& out);

void set_log_level(log_level level);
bool log_enabled(log_level level);

void log(log_level level, std::string_view component, std::string_view text);

}  // namespace warren
