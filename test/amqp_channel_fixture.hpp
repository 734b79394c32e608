// What the AMQP suites that speak raw frames share: a node with a raw client that has channel 1
// open (channel_one), and the frames of a method and of a whole publish.
#pragma once

#include "amqp_raw_client.hpp"
#include "subprocess.hpp"

#include <cstdint>
#include <string>

namespace warren::test {

inline std::string method_frame(uint16_t channel, writer w) {
  std::string out;
  write_frame(out, frame_type::method, channel, w.bytes());
  return out;
}

// basic.publish with its header and body; `announced` is the size the header claims.
inline std::string publish_frames(uint16_t channel, const std::string& exchange,
                                  const std::string& key, const std::string& body,
                                  uint64_t announced) {
  auto m = method_payload({60, 40});
  m.short_uint(0);
  m.short_string(exchange);
  m.short_string(key);
  m.bits({false, false});
  auto out = method_frame(channel, std::move(m));
  content_header h;
  h.body_size = announced;
  write_frame(out, frame_type::header, channel, content_header_payload(h));
  if (!body.empty()) write_frame(out, frame_type::body, channel, body);
  return out;
}

inline std::string publish_frames(uint16_t channel, const std::string& exchange,
                                  const std::string& key, const std::string& body) {
  return publish_frames(channel, exchange, key, body, body.size());
}

// A node and a raw client with channel 1 open on it.
struct channel_one {
  node_process node;
  raw_client c{node.amqp_port()};
  channel_one() {
    c.handshake();
    c.open_channel(1);
  }
};

}  // namespace warren::test
