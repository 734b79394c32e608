#include "actors/queue_arguments.hpp"

#include "actors/names.hpp"

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

}  // namespace

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
    } else if (f.key == "x-overflow") {
      if (f.value.kind == field_value::text && f.value.s == "drop-head")
        out.overflow = overflow_policy::drop_head;
      else if (f.value.kind == field_value::text && f.value.s == "reject-publish")
        out.overflow = overflow_policy::reject_publish;
      else
        problem = "argument 'x-overflow' must be drop-head or reject-publish, got " +
                  quote(to_string(f.value));
    } else if (f.key == "x-dead-letter-exchange") {
      problem = text(f, out.dead_letter_exchange);
      if (problem.empty() && !out.dead_letter_exchange->empty())
        problem = check_name("dead-letter exchange name", *out.dead_letter_exchange);
    } else if (f.key == "x-dead-letter-routing-key") {
      problem = text(f, out.dead_letter_routing_key);
      if (problem.empty())
        problem = check_key("dead-letter routing key", *out.dead_letter_routing_key);
    } else if (f.key == "x-max-priority" || f.key == "x-max-length-bytes" ||
               f.key == "x-single-active-consumer") {
      // RabbitMQ's classic queues honour these; accepting one and ignoring it would let an
      // application believe in an order or a bound that does not hold.
      problem = "argument '" + f.key + "' is not supported by this node yet; declare the queue " +
                "without it";
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

}  // namespace warren
