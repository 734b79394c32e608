#include "actors/queue_arguments.hpp"

#include "core/names.hpp"

#include <algorithm>
#include <charconv>

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
      if (f.value.kind != field_value::text || f.value.s != "classic")
        problem = "argument 'x-queue-type' " + quote(to_string(f.value)) +
                  " is not supported; this node offers 'classic'";
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
