// Queue arguments (x-message-ttl, x-expires, x-max-length, x-max-length-bytes, x-overflow,
// x-dead-letter-exchange, x-dead-letter-routing-key, x-max-priority, x-single-active-consumer,
// x-queue-type), parsed once at declare time; and consumer arguments (x-priority).
//
// Unknown arguments are kept and shown but have no effect, as in RabbitMQ; known ones with a
// wrong type or value are refused with PRECONDITION_FAILED naming the argument.
#pragma once

#include "core/message.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace warren {

/// What a full queue does with one more message: drop its oldest (dead-lettered as "maxlen"),
/// refuse the new one (a negative confirm), or refuse and dead-letter it.
enum class overflow_policy : uint8_t { drop_head, reject_publish, reject_publish_dlx };

struct queue_limits {
  std::optional<int64_t> message_ttl_ms;
  std::optional<int64_t> expires_ms;  // delete the queue after this long unused
  std::optional<int64_t> max_length;
  std::optional<int64_t> max_length_bytes;  // bodies of ready messages
  overflow_policy overflow = overflow_policy::drop_head;
  uint8_t max_priority = 0;  // 0: no priorities; else messages' priorities count up to it
  bool single_active_consumer = false;
  std::optional<std::string> dead_letter_exchange;
  std::optional<std::string> dead_letter_routing_key;
};

/// Parses `args` into `out`; on failure returns what is wrong (and `out` is unspecified).
std::string parse_queue_arguments(const field_table& args, queue_limits& out);

/// Consumer arguments: x-priority (an integer; 0 when absent). Returns what is wrong, or empty.
std::string parse_consumer_arguments(const field_table& args, int32_t& priority);

/// Per-message TTL from the `expiration` property; empty string = none. Returns what is wrong,
/// or empty on success.
std::string parse_expiration(const std::string& expiration, std::optional<int64_t>& ttl_ms);

/// The time to live of `m` in a queue with `limits` (the smaller of the queue's message TTL
/// and the message's expiration); none when it never expires.
std::optional<int64_t> message_ttl(const queue_limits& limits, const message& m);

}  // namespace warren
