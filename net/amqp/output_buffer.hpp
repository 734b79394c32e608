// output_buffer: what an AMQP session sends, framed. Methods, contents (split into body frames
// of the negotiated size) and heartbeats are appended; big body chunks are not copied but
// written in place from their message. Two buffers take turns, so one fills while the other is
// on its way and their capacity is reused rather than reallocated per write.
#pragma once

#include "core/message.hpp"
#include "net/amqp/frame.hpp"

#include <kj/array.h>

#include <string>
#include <string_view>
#include <vector>

namespace warren::amqp {

class output_buffer {
 public:
  /// Body chunks at least this big are written from the message itself rather than copied.
  static constexpr size_t gather_threshold = 512;

  bool empty() const { return filling_.empty(); }

  void method(uint16_t channel, std::string_view payload);
  /// A method with content: the method, a content header, then body frames of at most
  /// `frame_max` bytes each.
  void content(uint16_t channel, std::string_view method, const message_ptr& m, uint32_t frame_max);
  void heartbeat();
  void raw(std::string_view bytes) { filling_.append(bytes.data(), bytes.size()); }

  /// Takes what was appended for one gather write: the pieces point into this buffer and into
  /// messages it keeps alive, and stay valid until written().
  kj::Array<kj::ArrayPtr<const kj::byte>> start_write();
  void written();

 private:
  // A body chunk inserted at byte `at` of its buffer.
  struct body_ref {
    size_t at;
    message_ptr msg;
    size_t offset, length;
  };
  std::string filling_, writing_;
  std::vector<body_ref> filling_refs_, writing_refs_;
};

}  // namespace warren::amqp
