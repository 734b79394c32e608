// segment_format: the bytes of a queue's files, format version 2 (DESIGN §5). Pure code: no I/O.
//
// A queue folder holds pairs of files named by the first sequence number they hold (20 digits,
// so name order is sequence order):
//   <first>.seg   messages, append-only, never edited in place
//   <first>.ack   marks for the messages of that segment: acked (gone for good) and delivered
//                 (may have reached a consumer), append-only
//   <first>.idx   a closed segment's index: where each record is, so that a restart can leave
//                 paged-out messages on disk without reading them. A checkpoint, not a source
//                 of truth: written whole (to a .tmp, then renamed) once the segment is closed
//                 and synced, and trusted only while it matches the segment's size
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
//   u64 seq | 16-byte message id | u8 flags (bit 0 persistent, bit 1 enqueue time follows) |
//   [i64 enqueue time, ms since the epoch] | u8 length, exchange | u8 length, routing key |
//   u32 length, properties (packed Cap'n Proto; 0 when the message carries nothing but its
//   delivery mode) | body
// The enqueue time is stored only for messages that can expire (the queue has a message TTL or
// the message an expiration), so that their TTL runs on across a restart.
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

enum class file_kind : uint8_t { segment, marks, index };

/// The 16 header bytes of a file that holds sequence numbers from `first_seq` on.
std::string file_header(file_kind kind, uint64_t first_seq);

/// Empty when `data` opens with the right header for `first_seq`; otherwise what is wrong.
std::string check_file_header(std::string_view data, file_kind kind, uint64_t first_seq);

/// Appends one frame (header and payload) to `out`.
void append_frame(std::string& out, std::string_view payload);

/// A message's payload, with its enqueue time when `enqueued_at_ms` is not 0; throws
/// std::invalid_argument when a name or key is over 255 bytes.
std::string encode_message(uint64_t seq, const message& m, int64_t enqueued_at_ms = 0);

/// The sequence number at the start of a message payload (0 if too short).
uint64_t payload_seq(std::string_view payload);

/// What a message payload holds, read without decoding it.
struct payload_summary {
  uint64_t seq = 0;
  bool persistent = false;
  uint64_t body_bytes = 0;
};

/// False when the payload is too short or its lengths run past its end.
bool summarize_payload(std::string_view payload, payload_summary& out);

/// Decodes a message payload; throws std::runtime_error saying what is malformed. The enqueue
/// time goes to `enqueued_at_ms` when given (0 when the record has none).
std::shared_ptr<message> decode_message(std::string_view payload, uint64_t& seq,
                                        int64_t* enqueued_at_ms = nullptr);

/// The payload of the frame at `offset` of `data`, when a frame of `length` is there and its
/// checksum holds; empty otherwise.
std::string_view frame_payload(std::string_view data, size_t offset, uint32_t length);

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

/// One record of a segment, as its index file lists it (an index payload: u64 segment size |
/// u32 count | count x (u64 seq | u32 offset | u32 length | u32 body bytes | u8 flags), in
/// frames of at most 65,536 entries).
struct index_entry {
  uint64_t seq = 0;
  uint32_t offset = 0;  // of the record's frame in the segment
  uint32_t length = 0;  // of its payload
  uint32_t body_bytes = 0;
  bool persistent = false;
};

/// A whole index file for a segment of `segment_size` bytes from `first_seq`.
std::string encode_index(uint64_t first_seq, uint64_t segment_size,
                         const std::vector<index_entry>& entries);

/// Reads an index file; empty when it checks out (header, every frame, one segment size, entries
/// in sequence order inside the segment), else what is wrong.
std::string decode_index(std::string_view data, uint64_t first_seq, uint64_t& segment_size,
                         std::vector<index_entry>& out);

/// The 20-digit file name stem of a sequence number.
std::string file_stem(uint64_t first_seq);

/// Parses a 20-digit stem; false for anything else (other lengths, non-digits, overflow).
bool parse_file_stem(std::string_view stem, uint64_t& out);

}  // namespace warren::persistence::format
