#include "net/amqp/frame.hpp"

#include <algorithm>

namespace warren::amqp {

std::optional<frame> parse_frame(std::string_view bytes, uint32_t frame_max, size_t& consumed) {
  auto view = parse_frame_view(bytes, frame_max, consumed);
  if (!view) return std::nullopt;
  return view->owned();
}

std::optional<frame_view> parse_frame_view(std::string_view bytes, uint32_t frame_max,
                                           size_t& consumed) {
  if (bytes.size() < 7) return std::nullopt;
  reader head(bytes.substr(0, 7));
  auto type = head.octet();
  auto channel = head.short_uint();
  auto size = head.long_uint();
  if (type != 1 && type != 2 && type != 3 && type != 8)
    throw protocol_error(reply_code::frame_error, "unknown frame type " + describe_octet(type));
  if (frame_max != 0 && size + frame_overhead > frame_max)
    throw protocol_error(reply_code::frame_error,
                         "frame of " + std::to_string(size + frame_overhead) +
                             " bytes exceeds frame_max " + std::to_string(frame_max));
  if (bytes.size() < 7 + static_cast<size_t>(size) + 1) return std::nullopt;
  auto end = static_cast<uint8_t>(bytes[7 + size]);
  if (end != frame_end)
    throw protocol_error(reply_code::frame_error,
                         "frame-end octet is " + describe_octet(end) + ", not 0xce");
  if (type == 8 && channel != 0)
    throw protocol_error(reply_code::frame_error,
                         "heartbeat frame on channel " + std::to_string(channel));
  consumed = 7 + static_cast<size_t>(size) + 1;
  return frame_view{static_cast<frame_type>(type), channel, bytes.substr(7, size)};
}

void write_frame(std::string& out, frame_type type, uint16_t channel, std::string_view payload) {
  writer w;
  w.octet(static_cast<uint8_t>(type));
  w.short_uint(channel);
  w.long_uint(static_cast<uint32_t>(payload.size()));
  out += w.bytes();
  out.append(payload.data(), payload.size());
  out.push_back(static_cast<char>(frame_end));
}

std::string method_name(method_id id) {
  struct entry {
    uint16_t class_id, method;
    const char* name;
  };
  static const entry names[] = {
      {10, 10, "connection.start"},
      {10, 11, "connection.start-ok"},
      {10, 20, "connection.secure"},
      {10, 21, "connection.secure-ok"},
      {10, 30, "connection.tune"},
      {10, 31, "connection.tune-ok"},
      {10, 40, "connection.open"},
      {10, 41, "connection.open-ok"},
      {10, 50, "connection.close"},
      {10, 51, "connection.close-ok"},
      {10, 60, "connection.blocked"},
      {10, 61, "connection.unblocked"},
      {10, 70, "connection.update-secret"},
      {10, 71, "connection.update-secret-ok"},
      {20, 10, "channel.open"},
      {20, 11, "channel.open-ok"},
      {20, 20, "channel.flow"},
      {20, 21, "channel.flow-ok"},
      {20, 40, "channel.close"},
      {20, 41, "channel.close-ok"},
      {40, 10, "exchange.declare"},
      {40, 11, "exchange.declare-ok"},
      {40, 20, "exchange.delete"},
      {40, 21, "exchange.delete-ok"},
      {40, 30, "exchange.bind"},
      {40, 31, "exchange.bind-ok"},
      {40, 40, "exchange.unbind"},
      {40, 51, "exchange.unbind-ok"},
      {50, 10, "queue.declare"},
      {50, 11, "queue.declare-ok"},
      {50, 20, "queue.bind"},
      {50, 21, "queue.bind-ok"},
      {50, 30, "queue.purge"},
      {50, 31, "queue.purge-ok"},
      {50, 40, "queue.delete"},
      {50, 41, "queue.delete-ok"},
      {50, 50, "queue.unbind"},
      {50, 51, "queue.unbind-ok"},
      {60, 10, "basic.qos"},
      {60, 11, "basic.qos-ok"},
      {60, 20, "basic.consume"},
      {60, 21, "basic.consume-ok"},
      {60, 30, "basic.cancel"},
      {60, 31, "basic.cancel-ok"},
      {60, 40, "basic.publish"},
      {60, 50, "basic.return"},
      {60, 60, "basic.deliver"},
      {60, 70, "basic.get"},
      {60, 71, "basic.get-ok"},
      {60, 72, "basic.get-empty"},
      {60, 80, "basic.ack"},
      {60, 90, "basic.reject"},
      {60, 100, "basic.recover-async"},
      {60, 110, "basic.recover"},
      {60, 111, "basic.recover-ok"},
      {60, 120, "basic.nack"},
      {85, 10, "confirm.select"},
      {85, 11, "confirm.select-ok"},
      {90, 10, "tx.select"},
      {90, 11, "tx.select-ok"},
      {90, 20, "tx.commit"},
      {90, 21, "tx.commit-ok"},
      {90, 30, "tx.rollback"},
      {90, 31, "tx.rollback-ok"},
  };
  for (const auto& e : names)
    if (e.class_id == id.class_id && e.method == id.method) return e.name;
  return std::to_string(id.class_id) + "." + std::to_string(id.method);
}

writer method_payload(method_id id) {
  writer w;
  w.short_uint(id.class_id);
  w.short_uint(id.method);
  return w;
}

bool operator==(const basic_properties& a, const basic_properties& b) {
  return a.content_type == b.content_type && a.content_encoding == b.content_encoding &&
         a.headers == b.headers && a.delivery_mode == b.delivery_mode && a.priority == b.priority &&
         a.correlation_id == b.correlation_id && a.reply_to == b.reply_to &&
         a.expiration == b.expiration && a.message_id == b.message_id &&
         a.timestamp == b.timestamp && a.type == b.type && a.user_id == b.user_id &&
         a.app_id == b.app_id && a.cluster_id == b.cluster_id;
}

namespace {

// Property flag bits of the basic class, highest first (bit 0 is the continuation flag).
enum : uint16_t {
  f_content_type = 1u << 15,
  f_content_encoding = 1u << 14,
  f_headers = 1u << 13,
  f_delivery_mode = 1u << 12,
  f_priority = 1u << 11,
  f_correlation_id = 1u << 10,
  f_reply_to = 1u << 9,
  f_expiration = 1u << 8,
  f_message_id = 1u << 7,
  f_timestamp = 1u << 6,
  f_type = 1u << 5,
  f_user_id = 1u << 4,
  f_app_id = 1u << 3,
  f_cluster_id = 1u << 2,
};

}  // namespace

content_header parse_content_header(std::string_view payload) {
  reader r(payload);
  content_header h;
  h.class_id = r.short_uint();
  r.short_uint();  // weight, unused
  h.body_size = r.longlong_uint();
  auto flags = r.short_uint();
  if (flags & 0x3)
    throw protocol_error(reply_code::syntax_error,
                         "content header property flags use reserved or continuation bits");
  auto& p = h.properties;
  if (flags & f_content_type) p.content_type = r.short_string();
  if (flags & f_content_encoding) p.content_encoding = r.short_string();
  if (flags & f_headers) p.headers = r.field_table();
  if (flags & f_delivery_mode) p.delivery_mode = r.octet();
  if (flags & f_priority) p.priority = r.octet();
  if (flags & f_correlation_id) p.correlation_id = r.short_string();
  if (flags & f_reply_to) p.reply_to = r.short_string();
  if (flags & f_expiration) p.expiration = r.short_string();
  if (flags & f_message_id) p.message_id = r.short_string();
  if (flags & f_timestamp) p.timestamp = r.longlong_uint();
  if (flags & f_type) p.type = r.short_string();
  if (flags & f_user_id) p.user_id = r.short_string();
  if (flags & f_app_id) p.app_id = r.short_string();
  if (flags & f_cluster_id) p.cluster_id = r.short_string();
  if (!r.done())
    throw protocol_error(reply_code::syntax_error,
                         std::to_string(r.remaining()) + " stray byte(s) after content properties");
  return h;
}

std::string content_header_payload(const content_header& h) {
  const auto& p = h.properties;
  uint16_t flags =
      (p.content_type ? f_content_type : 0) | (p.content_encoding ? f_content_encoding : 0) |
      (p.headers ? f_headers : 0) | (p.delivery_mode ? f_delivery_mode : 0) |
      (p.priority ? f_priority : 0) | (p.correlation_id ? f_correlation_id : 0) |
      (p.reply_to ? f_reply_to : 0) | (p.expiration ? f_expiration : 0) |
      (p.message_id ? f_message_id : 0) | (p.timestamp ? f_timestamp : 0) | (p.type ? f_type : 0) |
      (p.user_id ? f_user_id : 0) | (p.app_id ? f_app_id : 0) | (p.cluster_id ? f_cluster_id : 0);
  writer w;
  w.short_uint(h.class_id);
  w.short_uint(0);
  w.longlong_uint(h.body_size);
  w.short_uint(flags);
  if (p.content_type) w.short_string(*p.content_type);
  if (p.content_encoding) w.short_string(*p.content_encoding);
  if (p.headers) w.field_table(*p.headers);
  if (p.delivery_mode) w.octet(*p.delivery_mode);
  if (p.priority) w.octet(*p.priority);
  if (p.correlation_id) w.short_string(*p.correlation_id);
  if (p.reply_to) w.short_string(*p.reply_to);
  if (p.expiration) w.short_string(*p.expiration);
  if (p.message_id) w.short_string(*p.message_id);
  if (p.timestamp) w.longlong_uint(*p.timestamp);
  if (p.type) w.short_string(*p.type);
  if (p.user_id) w.short_string(*p.user_id);
  if (p.app_id) w.short_string(*p.app_id);
  if (p.cluster_id) w.short_string(*p.cluster_id);
  return w.take();
}

void write_content(std::string& out, uint16_t channel, std::string_view method,
                   const content_header& header, std::string_view body, uint32_t frame_max) {
  write_frame(out, frame_type::method, channel, method);
  write_frame(out, frame_type::header, channel, content_header_payload(header));
  size_t chunk = frame_max == 0 ? body.size() : frame_max - frame_overhead;
  for (size_t at = 0; at < body.size(); at += chunk)
    write_frame(out, frame_type::body, channel, body.substr(at, std::min(chunk, body.size() - at)));
}

}  // namespace warren::amqp
