// warrenctl's stream commands: commit-offset QUEUE GROUP OFFSET, and the offset specs that
// consume --offset takes.
#pragma once

#include "warren/connection.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace warrenctl {

/// first | last | next | an offset (digits) | a time: ISO 8601 in UTC
/// ("2026-12-02T10:30:00Z", seconds optional) or a span back from now ("-30m", "-2h", "-7D").
/// Anything else is a usage_error naming what was given.
warren::client::stream_offset parse_stream_offset(const std::string& text);

class stream_commands {
 public:
  explicit stream_commands(CLI::App& app);
  /// Carries out `cmd` if it is one of these; false when it is not.
  bool run(const CLI::App* cmd, warren::client::connection& conn, bool as_json);

 private:
  std::string queue_, group_;
  uint64_t offset_ = 0;
  CLI::App* commit_ = nullptr;
};

}  // namespace warrenctl
