// Queue arguments (x-message-ttl, x-expires, x-max-length, x-max-length-bytes, x-overflow,
// x-dead-letter-exchange, x-dead-letter-routing-key, x-max-priority, x-single-active-consumer,
// x-queue-type; for streams x-max-age and x-stream-max-segment-size-bytes), parsed once at
// declare time; and consumer arguments (x-priority, x-stream-offset, x-stream-group).
//
// Unknown arguments are kept and shown but have no effect, as in RabbitMQ; known ones with a
// wrong type or value are refused with PRECONDITION_FAILED naming the argument.
#pragma once

#include "actors/common/protocol.hpp"
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
  // x-queue-type=stream: an append-only log. Retention drops whole segments from its head
  // while the log is over max_length_bytes or a segment's messages are all older than
  // max_age_ms.
  bool stream = false;
  std::optional<int64_t> max_age_ms;
  std::optional<int64_t> stream_segment_bytes;
};

/// Parses `args` into `out`; on failure returns what is wrong (and `out` is unspecified).
std::string parse_queue_arguments(const field_table& args, queue_limits& out);

/// What a declaration of a stream must also satisfy (durable, not exclusive nor auto-delete, no
/// classic-only argument); what is wrong, or empty. Also refuses stream arguments on a classic
/// queue.
std::string check_queue_kind(const queue_limits& limits, const field_table& args, bool durable,
                             bool exclusive, bool auto_delete);

/// RabbitMQ's x-max-age: a positive number and a unit, Y M D h m s ("7D", "12h"), in ms.
std::string parse_max_age(const std::string& text, int64_t& ms);

/// Consumer arguments: x-priority (an integer; 0 when absent). Returns what is wrong, or empty.
std::string parse_consumer_arguments(const field_table& args, int32_t& priority);

/// Stream consumer arguments: x-stream-offset ("first" | "last" | "next", an integer offset,
/// an AMQP timestamp in seconds, or an interval back from now such as "30m") and
/// x-stream-group (text). Returns what is wrong, or empty.
std::string parse_stream_arguments(const field_table& args, stream_offset_spec& offset,
                                   std::string& group);

/// Per-message TTL from the `expiration` property; empty string = none. Returns what is wrong,
/// or empty on success.
std::string parse_expiration(const std::string& expiration, std::optional<int64_t>& ttl_ms);

/// The time to live of `m` in a queue with `limits` (the smaller of the queue's message TTL
/// and the message's expiration); none when it never expires.
std::optional<int64_t> message_ttl(const queue_limits& limits, const message& m);

}  // namespace warren
