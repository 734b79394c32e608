// AMQP 0-9-1 framing: the protocol header, frames (method, content header, content body,
// heartbeat), method frame payloads, and basic-class content headers. Pure code, unit-tested.
//
// A frame is: type (1 octet), channel (2), payload size (4), payload, frame-end 0xCE. Framing
// errors (unknown type, size over the negotiated frame_max, a wrong frame-end) are FRAME_ERROR
// connection errors.
#pragma once

#include "net/amqp/codec.hpp"

#include <optional>

namespace warren::amqp {

/// What a client sends first: "AMQP" 0 0 9 1.
constexpr std::string_view protocol_header{"AMQP\x00\x00\x09\x01", 8};

enum class frame_type : uint8_t { method = 1, header = 2, body = 3, heartbeat = 8 };

constexpr uint8_t frame_end = 0xCE;
constexpr size_t frame_overhead = 8;  // type, channel, size and frame-end around a payload
/// The smallest frame_max a peer may ask for (spec 4.2.3), and what applies before tuning.
constexpr uint32_t frame_min_size = 4096;

struct frame {
  frame_type type = frame_type::heartbeat;
  uint16_t channel = 0;
  std::string payload;
};

/// A frame whose payload still lies in the buffer it was parsed from.
struct frame_view {
  frame_type type = frame_type::heartbeat;
  uint16_t channel = 0;
  std::string_view payload;

  frame owned() const { return frame{type, channel, std::string(payload)}; }
  static frame_view of(const frame& f) { return {f.type, f.channel, f.payload}; }
};

/// As parse_frame, without copying the payload: the view is valid while `bytes` is.
std::optional<frame_view> parse_frame_view(std::string_view bytes, uint32_t frame_max,
                                           size_t& consumed);

/// Parses the frame at the front of `bytes`. Returns nullopt while the frame is incomplete;
/// on success sets `consumed` to its length. Throws protocol_error (FRAME_ERROR) for an unknown
/// frame type, a frame longer than `frame_max` (0 = no limit), or a bad frame-end octet.
std::optional<frame> parse_frame(std::string_view bytes, uint32_t frame_max, size_t& consumed);

void write_frame(std::string& out, frame_type type, uint16_t channel, std::string_view payload);

/// Class and method of a method frame.
struct method_id {
  uint16_t class_id = 0;
  uint16_t method = 0;
  friend bool operator==(method_id a, method_id b) {
    return a.class_id == b.class_id && a.method == b.method;
  }
};

/// "basic.publish" for {60, 40}; "60.99" for methods it does not know.
std::string method_name(method_id id);

/// Starts a method payload: class and method ids; arguments are appended by the caller.
writer method_payload(method_id id);

/// The basic class's content properties, in AMQP's own types.
struct basic_properties {
  std::optional<std::string> content_type, content_encoding;
  std::optional<table> headers;
  std::optional<uint8_t> delivery_mode, priority;
  std::optional<std::string> correlation_id, reply_to, expiration, message_id;
  std::optional<uint64_t> timestamp;
  std::optional<std::string> type, user_id, app_id, cluster_id;

  friend bool operator==(const basic_properties& a, const basic_properties& b);
};

struct content_header {
  uint16_t class_id = 60;
  uint64_t body_size = 0;
  basic_properties properties;
};

/// Throws protocol_error (SYNTAX_ERROR) for a truncated header or property flags it cannot
/// carry (continuation flags, reserved bits).
content_header parse_content_header(std::string_view payload);
std::string content_header_payload(const content_header& header);

/// Writes a method frame followed by the content header and the body cut into frames that fit
/// `frame_max` (a publish, deliver, return or get-ok).
void write_content(std::string& out, uint16_t channel, std::string_view method,
                   const content_header& header, std::string_view body, uint32_t frame_max);

}  // namespace warren::amqp
