// raft_wire_check: follows one raft stream from a peer, message by message, and says when it
// holds something libraft 0.15 would read out of bounds or allocate without limit. raft_uv
// decodes headers without checking their lengths (a short request-vote header, an
// install-snapshot whose configuration length points anywhere), so the link checks each message
// before raft sees a byte of it and ends a stream that fails.
//
// The layout is raft_uv's (src/uv_encoding.c): a preamble of two little-endian u64 (message
// type, header length), the header, then for append-entries the entries' data and for
// install-snapshot the snapshot's. What is checked: the type; each header's length against its
// type; append-entries' entry count, types and sizes (multiples of 8, as raft pads them);
// install-snapshot's configuration, server by server; and caps on header and payload sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace warren::persistence {

class raft_wire_check {
 public:
  static constexpr size_t max_header_bytes = 1 << 20;
  static constexpr uint64_t max_payload_bytes = 1ull << 30;  // a snapshot of a large cluster
  static constexpr uint64_t max_entries = 1 << 16;
  static constexpr uint64_t max_servers = 1024;

  /// Takes the next bytes of the stream; false once it went wrong (and for ever after).
  bool feed(const char* data, size_t size);
  /// Why the stream failed; "" while it is sound.
  const std::string& problem() const { return problem_; }

 private:
  enum class part { preamble, header, payload };
  part at_ = part::preamble;
  std::string buffer_;  // the preamble or header read so far
  uint64_t type_ = 0;
  uint64_t header_len_ = 0;
  uint64_t payload_left_ = 0;
  std::string problem_;

  bool fail(std::string why);
  bool preamble_done();
  bool header_done();
  bool append_entries_header();
  bool install_snapshot_header();
};

}  // namespace warren::persistence
