// segment_format: the bytes of a queue's files, format version 2 (DESIGN §5). Pure code: no I/O.
//
// A queue folder holds pairs of files named by the first sequence number they hold (20 digits,
// so name order is sequence order):
//   <first>.seg   messages, append-only, never edited in place
//   <first>.ack   marks for the messages of that segment: acked (gone for good) and delivered
//                 (may have reached a consumer), append-only
// Each file opens with a 16-byte header: 8 bytes of magic ("WRNSEG02" / "WRNACK02") and the
// file's first sequence number (u64 little-endian), so a file that is not ours, or that was
// renamed, is recognised.
//
// Both files are a run of frames:
//   u32 crc32c(length, payload) | u32 length | payload
// The checksum covers the length too, so a damaged length is caught, and a reader that meets a
// bad frame can scan forward for the next frame that checks out (scan_frames).
//
// A message payload:
//   u64 seq | 16-byte message id | u8 flags (bit 0 persistent) | u8 length, exchange |
//   u8 length, routing key | u32 length, properties (packed Cap'n Proto; 0 when the message
//   carries nothing but its delivery mode) | body
// A mark payload:
//   u8 kind (1 acked, 2 delivered) | runs of (u64 first seq, u32 count)
#pragma once

#include "core/message.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace warren::persistence::format {

constexpr uint32_t version = 2;
constexpr size_t file_header_size = 16;
constexpr size_t frame_header_size = 8;
constexpr uint32_t max_frame = 256u << 20;
constexpr size_t min_message_payload = 8 + 16 + 1 + 1 + 1 + 4;  // seq id flags lengths

enum class file_kind : uint8_t { segment, marks };

/// The 16 header bytes of a file that holds sequence numbers from `first_seq` on.
std::string file_header(file_kind kind, uint64_t first_seq);

/// Empty when `data` opens with the right header for `first_seq`; otherwise what is wrong.
std::string check_file_header(std::string_view data, file_kind kind, uint64_t first_seq);

/// Appends one frame (header and payload) to `out`.
void append_frame(std::string& out, std::string_view payload);

/// A message's payload; throws std::invalid_argument when a name or key is over 255 bytes.
std::string encode_message(uint64_t seq, const message& m);

/// The sequence number at the start of a message payload (0 if too short).
uint64_t payload_seq(std::string_view payload);

/// Decodes a message payload; throws std::runtime_error saying what is malformed.
std::shared_ptr<message> decode_message(std::string_view payload, uint64_t& seq);

enum class mark : uint8_t { acked = 1, delivered = 2 };

/// One mark payload for `seqs` (any order; consecutive numbers become one run).
std::string encode_marks(mark kind, std::vector<uint64_t> seqs);

/// Calls `each(kind, seq)` for every sequence number of a mark payload; false if malformed.
bool decode_marks(std::string_view payload, const std::function<void(mark, uint64_t)>& each);

struct frame_span {
  uint64_t offset;  // of the frame header
  uint32_t length;  // of the payload
};

struct damaged_span {
  uint64_t offset;
  uint64_t bytes;
};

struct scan_result {
  std::vector<frame_span> frames;
  std::vector<damaged_span> damaged;  // bytes between good frames (or after the last one)
  bool torn_tail = false;             // the last damaged span runs to the end of the data
};

/// Walks the frames of `data` from `start`. Where a frame does not check out, scans forward
/// byte by byte for the next offset whose frame does (and whose payload `plausible` accepts:
/// a cheap test run before the checksum), so one damaged frame costs only its own bytes.
scan_result scan_frames(std::string_view data, size_t start,
                        const std::function<bool(std::string_view payload)>& plausible);

/// The 20-digit file name stem of a sequence number.
std::string file_stem(uint64_t first_seq);

/// Parses a 20-digit stem; false for anything else (other lengths, non-digits, overflow).
bool parse_file_stem(std::string_view stem, uint64_t& out);

}  // namespace warren::persistence::format
