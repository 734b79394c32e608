#include "core/log.hpp"

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace warren {

namespace {

std::atomic<int> current_level{static_cast<int>(log_level::info)};

const char* level_name(log_level level) {
  switch (level) {
    case log_level::error:
      return "ERROR";
    case log_level::warn:
      return "WARN ";
    case log_level::info:
      return "INFO ";
    case log_level::debug:
      return "DEBUG";
  }
  return "INFO ";
}

}  // namespace

bool parse_log_level(std::string_view text, log_level& out) {
  if (text == "error")
    out = log_level::error;
  else if (text == "warn")
    out = log_level::warn;
  else if (text == "info")
    out = log_level::info;
  else if (text == "debug")
    out = log_level::debug;
  else
    return false;
  return true;
}

void set_log_level(log_level level) {
  current_level = static_cast<int>(level);
}

bool log_enabled(log_level level) {
  return static_cast<int>(level) <= current_level.load();
}

void log(log_level level, std::string_view component, std::string_view text) {
  if (!log_enabled(level)) return;
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = std::string(stamp) + "." + (millis < 100 ? (millis < 10 ? "00" : "0") : "") +
                     std::to_string(millis) + "Z " + level_name(level) + " " +
                     std::string(component) + ": " + std::string(text) + "\n";
  // One write(2) per line keeps lines whole when threads log at once.
  auto rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

}  // namespace warren
