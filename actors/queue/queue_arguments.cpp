#include "actors/queue/queue_arguments.hpp"

#include "core/clock.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>

namespace warren {

namespace {

std::string non_negative(const field& f, std::optional<int64_t>& out, int64_t min) {
  if (f.value.kind != field_value::integer || f.value.i < min)
    return "argument '" + f.key + "' must be an integer >= " + std::to_string(min) + ", got " +
           quote(to_string(f.value));
  out = f.value.i;
  return {};
}

std::string text(const field& f, std::optional<std::string>& out) {
  if (f.value.kind != field_value::text)
    return "argument '" + f.key + "' must be text, got " + quote(to_string(f.value));
  out = f.value.s;
  return {};
}

std::string overflow(const field& f, overflow_policy& out) {
  static const std::pair<const char*, overflow_policy> known[] = {
      {"drop-head", overflow_policy::drop_head},
      {"reject-publish", overflow_policy::reject_publish},
      {"reject-publish-dlx", overflow_policy::reject_publish_dlx}};
  for (const auto& [name, policy] : known) {
    if (f.value.kind == field_value::text && f.value.s == name) {
      out = policy;
      return {};
    }
  }
  return "argument 'x-overflow' must be drop-head, reject-publish or reject-publish-dlx, got " +
         quote(to_string(f.value));
}

}  // namespace

std::string parse_consumer_arguments(const field_table& args, int32_t& priority) {
  priority = 0;
  for (const auto& f : args) {
    if (f.key != "x-priority") continue;
    if (f.value.kind != field_value::integer || f.value.i < INT32_MIN || f.value.i > INT32_MAX)
      return "consumer argument 'x-priority' must be a 32-bit integer, got " +
             quote(to_string(f.value));
    priority = static_cast<int32_t>(f.value.i);
  }
  return {};
}

std::string parse_queue_arguments(const field_table& args, queue_limits& out) {
  out = queue_limits{};
  for (const auto& f : args) {
    std::string problem;
    if (f.key == "x-message-ttl") {
      problem = non_negative(f, out.message_ttl_ms, 0);
    } else if (f.key == "x-expires") {
      problem = non_negative(f, out.expires_ms, 1);
    } else if (f.key == "x-max-length") {
      problem = non_negative(f, out.max_length, 0);
    } else if (f.key == "x-max-length-bytes") {
      problem = non_negative(f, out.max_length_bytes, 0);
    } else if (f.key == "x-overflow") {
      problem = overflow(f, out.overflow);
    } else if (f.key == "x-max-priority") {
      std::optional<int64_t> max;
      problem = non_negative(f, max, 1);
      if (problem.empty() && *max > 255)
        problem =
            "argument 'x-max-priority' must be between 1 and 255, got " + quote(to_string(f.value));
      if (problem.empty()) out.max_priority = static_cast<uint8_t>(*max);
    } else if (f.key == "x-single-active-consumer") {
      if (f.value.kind != field_value::boolean)
        problem = "argument 'x-single-active-consumer' must be a boolean, got " +
                  quote(to_string(f.value));
      else
        out.single_active_consumer = f.value.b;
    } else if (f.key == "x-dead-letter-exchange") {
      problem = text(f, out.dead_letter_exchange);
      if (problem.empty() && !out.dead_letter_exchange->empty())
        problem = check_name("dead-letter exchange name", *out.dead_letter_exchange);
    } else if (f.key == "x-dead-letter-routing-key") {
      problem = text(f, out.dead_letter_routing_key);
      if (problem.empty())
        problem = check_key("dead-letter routing key", *out.dead_letter_routing_key);
    } else if (f.key == "x-queue-type") {
      bool known =
          f.value.kind == field_value::text && (f.value.s == "classic" || f.value.s == "stream");
      if (!known)
        problem = "argument 'x-queue-type' " + quote(to_string(f.value)) +
                  " is not supported; this node offers 'classic' and 'stream'";
      else
        out.stream = f.value.s == "stream";
    } else if (f.key == "x-max-age") {
      int64_t ms = 0;
      problem =
          f.value.kind == field_value::text
              ? parse_max_age(f.value.s, ms)
              : "argument 'x-max-age' must be text such as '7D', got " + quote(to_string(f.value));
      if (problem.empty()) out.max_age_ms = ms;
    } else if (f.key == "x-stream-max-segment-size-bytes") {
      problem = non_negative(f, out.stream_segment_bytes, 4096);
      if (problem.empty() && *out.stream_segment_bytes > (int64_t{1} << 30))
        problem = "argument 'x-stream-max-segment-size-bytes' must be at most 1 GiB, got " +
                  quote(to_string(f.value));
    }
    if (!problem.empty()) return problem;
  }
  return {};
}

std::string parse_max_age(const std::string& text, int64_t& ms) {
  static const std::pair<char, int64_t> units[] = {
      {'Y', 365LL * 86400000}, {'M', 30LL * 86400000}, {'D', 86400000},
      {'h', 3600000},          {'m', 60000},           {'s', 1000}};
  int64_t n = 0;
  auto* begin = text.data();
  auto* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(begin, end, n);
  if (ec == std::errc() && n > 0 && stop + 1 == end)
    for (const auto& [unit, scale] : units)
      if (*stop == unit && n <= INT64_MAX / scale) {
        ms = n * scale;
        return {};
      }
  return "argument 'x-max-age' must be a positive number and one of the units Y M D h m s "
         "(such as '7D' or '12h'), got " +
         quote(text);
}

std::string check_queue_kind(const queue_limits& limits, const field_table& args, bool durable,
                             bool exclusive, bool auto_delete) {
  static const char* classic_only[] = {"x-message-ttl",
                                       "x-expires",
                                       "x-max-length",
                                       "x-overflow",
                                       "x-max-priority",
                                       "x-dead-letter-exchange",
                                       "x-dead-letter-routing-key",
                                       "x-single-active-consumer"};
  static const char* stream_only[] = {"x-max-age", "x-stream-max-segment-size-bytes"};
  if (!limits.stream) {
    for (const auto* key : stream_only)
      if (find_field(args, key) != nullptr)
        return std::string("argument '") + key + "' applies to streams (x-queue-type=stream) only";
    return {};
  }
  if (!durable) return "a stream (x-queue-type=stream) must be durable";
  if (exclusive) return "a stream (x-queue-type=stream) cannot be exclusive";
  if (auto_delete) return "a stream (x-queue-type=stream) cannot be auto-delete";
  for (const auto* key : classic_only)
    if (find_field(args, key) != nullptr)
      return std::string("argument '") + key +
             "' does not apply to a stream; a stream's retention is set with x-max-length-bytes, "
             "x-max-age and x-stream-max-segment-size-bytes";
  return {};
}

namespace {

std::string stream_offset(const field_value& v, stream_offset_spec& out) {
  if (v.kind == field_value::text) {
    static const std::pair<const char*, stream_offset_spec::kind_t> named[] = {
        {"first", stream_offset_spec::first},
        {"last", stream_offset_spec::last},
        {"next", stream_offset_spec::next}};
    for (const auto& [name, kind] : named)
      if (v.s == name) {
        out = {kind, 0};
        return {};
      }
    // An interval back from now, written as x-max-age is ("1D", "30m"), as RabbitMQ takes it.
    if (int64_t ago = 0; parse_max_age(v.s, ago).empty()) {
      out = {stream_offset_spec::timestamp, wall_ms() - ago};
      return {};
    }
  } else if (v.kind == field_value::integer && v.amqp_type == 'T' && v.i >= 0) {
    out = {stream_offset_spec::timestamp, v.i * 1000};  // AMQP timestamps are in seconds
    return {};
  } else if (v.kind == field_value::integer && v.i >= 0) {
    out = {stream_offset_spec::offset, v.i};
    return {};
  }
  return "consumer argument 'x-stream-offset' must be 'first', 'last', 'next', an offset >= 0, "
         "a timestamp or an interval such as '30m', got " +
         quote(to_string(v));
}

}  // namespace

std::string parse_stream_arguments(const field_table& args, stream_offset_spec& offset,
                                   std::string& group) {
  offset = {};
  group.clear();
  for (const auto& f : args) {
    std::string problem;
    if (f.key == "x-stream-offset") {
      problem = stream_offset(f.value, offset);
    } else if (f.key == "x-stream-group") {
      if (f.value.kind != field_value::text || f.value.s.empty())
        problem = "consumer argument 'x-stream-group' must be a non-empty text, got " +
                  quote(to_string(f.value));
      else
        problem = check_name("consumer group name", f.value.s);
      if (problem.empty()) group = f.value.s;
    }
    if (!problem.empty()) return problem;
  }
  return {};
}

std::string parse_expiration(const std::string& expiration, std::optional<int64_t>& ttl_ms) {
  ttl_ms.reset();
  if (expiration.empty()) return {};
  int64_t v = 0;
  auto [end, ec] = std::from_chars(expiration.data(), expiration.data() + expiration.size(), v);
  if (ec != std::errc() || end != expiration.data() + expiration.size() || v < 0)
    return "expiration " + quote(expiration) + " is not a non-negative number of milliseconds";
  ttl_ms = v;
  return {};
}

std::optional<int64_t> message_ttl(const queue_limits& limits, const message& m) {
  std::optional<int64_t> ttl = limits.message_ttl_ms;
  std::optional<int64_t> per_message;
  if (parse_expiration(m.properties().expiration, per_message).empty() && per_message)
    ttl = ttl ? std::min(*ttl, *per_message) : *per_message;
  return ttl;
}

}  // namespace warren
