#include "apps/warrenctl_streams.hpp"

#include "apps/warrenctl_args.hpp"
#include "apps/warrenctl_output.hpp"
#include "core/clock.hpp"
#include "warren/channel.hpp"

#include <charconv>
#include <chrono>
#include <ctime>
#include <iostream>

namespace warrenctl {

using warren::client::stream_offset;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// "-30m": that long before now; units as x-max-age's (Y M D h m s).
bool parse_ago(const std::string& text, int64_t& ms) {
  static const std::pair<char, int64_t> units[] = {
      {'Y', 365LL * 86400000}, {'M', 30LL * 86400000}, {'D', 86400000},
      {'h', 3600000},          {'m', 60000},           {'s', 1000}};
  if (text.size() < 3 || text[0] != '-') return false;
  int64_t n = 0;
  auto* end = text.data() + text.size() - 1;
  auto [stop, ec] = std::from_chars(text.data() + 1, end, n);
  if (ec != std::errc() || stop != end || n <= 0) return false;
  for (const auto& [unit, scale] : units)
    if (*end == unit && n <= INT64_MAX / scale) {
      ms = warren::wall_ms() - n * scale;
      return true;
    }
  return false;
}

// "2026-12-02T10:30:00Z" or "2026-12-02T10:30Z", in UTC.
bool parse_iso(const std::string& text, int64_t& ms) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, used = 0;
  bool with_seconds = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &year, &month, &day,
                                  &hour, &minute, &second, &used) == 6;
  if (!with_seconds && std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2dZ%n", &year, &month, &day,
                                   &hour, &minute, &used) != 5)
    return false;
  if (used != static_cast<int>(text.size()) || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour > 23 || minute > 59 || second > 60)
    return false;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  return true;
}

}  // namespace

stream_offset parse_stream_offset(const std::string& text) {
  if (text.empty()) return {};
  if (text == "first") return {stream_offset::first, 0};
  if (text == "last") return {stream_offset::last, 0};
  if (text == "next") return {stream_offset::next, 0};
  int64_t value = 0;
  if (all_digits(text) &&
      std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc())
    return stream_offset::at(value);
  if (parse_ago(text, value) || parse_iso(text, value)) return stream_offset::since(value);
  throw usage_error("--offset '" + text +
                    "' is not first, last, next, an offset, a UTC time such as "
                    "2026-12-02T10:30:00Z, or a span back such as -30m");
}

stream_commands::stream_commands(CLI::App& app) {
  commit_ = app.add_subcommand(
      "commit-offset", "store OFFSET as the last one a stream's consumer GROUP is done with");
  commit_->add_option("QUEUE", queue_)->required();
  commit_->add_option("GROUP", group_)->required();
  commit_->add_option("OFFSET", offset_)->required();
}

bool stream_commands::run(const CLI::App* cmd, warren::client::connection& conn, bool as_json) {
  if (cmd != commit_) return false;
  auto group = conn.open_channel()->commit_offset(queue_, group_, offset_);
  print_list(std::vector<warren::client::group_row>{group}, as_json);
  return true;
}

}  // namespace warrenctl
