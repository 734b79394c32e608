#include "net/amqp/output_buffer.hpp"

#include "net/amqp/codec.hpp"
#include "net/amqp/properties.hpp"

namespace warren::amqp {

void output_buffer::method(uint16_t channel, std::string_view payload) {
  write_frame(filling_, frame_type::method, channel, payload);
}

void output_buffer::content(uint16_t channel, std::string_view method, const message_ptr& m,
                            uint32_t frame_max) {
  content_header h;
  h.body_size = m->body.size();
  h.properties = to_basic_properties(m->properties());
  write_frame(filling_, frame_type::method, channel, method);
  write_frame(filling_, frame_type::header, channel, content_header_payload(h));
  const auto& body = m->body;
  size_t chunk = frame_max - frame_overhead;
  for (size_t at = 0; at < body.size(); at += chunk) {
    size_t n = std::min(chunk, body.size() - at);
    writer head;
    head.octet(static_cast<uint8_t>(frame_type::body));
    head.short_uint(channel);
    head.long_uint(static_cast<uint32_t>(n));
    filling_ += head.bytes();
    if (n >= gather_threshold)
      filling_refs_.push_back({filling_.size(), m, at, n});
    else
      filling_.append(body, at, n);
    filling_.push_back(static_cast<char>(frame_end));
  }
}

void output_buffer::heartbeat() {
  write_frame(filling_, frame_type::heartbeat, 0, {});
}

kj::Array<kj::ArrayPtr<const kj::byte>> output_buffer::start_write() {
  std::swap(filling_, writing_);
  filling_.clear();
  std::swap(filling_refs_, writing_refs_);
  filling_refs_.clear();
  auto pieces = kj::heapArrayBuilder<kj::ArrayPtr<const kj::byte>>(2 * writing_refs_.size() + 1);
  auto bytes = [](const char* p) { return reinterpret_cast<const kj::byte*>(p); };
  size_t last = 0;
  for (const auto& ref : writing_refs_) {
    if (ref.at > last) pieces.add(bytes(writing_.data() + last), ref.at - last);
    pieces.add(bytes(ref.msg->body.data() + ref.offset), ref.length);
    last = ref.at;
  }
  if (writing_.size() > last) pieces.add(bytes(writing_.data() + last), writing_.size() - last);
  return pieces.finish();
}

void output_buffer::written() {
  writing_.clear();
  writing_refs_.clear();
}

}  // namespace warren::amqp
