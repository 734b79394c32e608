// segment_store: the message files of one durable queue (DESIGN §5).
//
// A folder of append-only segment files named by the first record's sequence number
// (zero-padded, so name order is sequence order), rolled at a size limit. Each record is
//   u32 length | u32 crc32c(payload) | u8 flags | 3 reserved | payload (capnp StoredMessage)
// with flags bit 0 = valid and bit 1 = delivered, at a fixed offset so that an ack or a
// delivery rewrites one byte.
//
// Writes are batched: append() fills a buffer; sync() writes it with one write per segment,
// applies pending flag edits and issues one fdatasync for everything appended (group commit).
// Flag edits alone are not synced: losing one in a crash only means a message comes back
// (at-least-once), never that a confirmed message is lost.
//
// Caveats: a write error (ENOSPC, EIO) makes sync() return false; the records of that batch are
// dropped from the store (the caller nacks them) and the segment is truncated back to its last
// good size, so a later sync can succeed once space returns.
#pragma once

#include "actors/message.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace warren::persistence {

enum class fsync_policy : uint8_t { batch, always, never };

bool parse_fsync_policy(const std::string& text, fsync_policy& out);

struct recovered_message {
  uint64_t seq = 0;
  std::shared_ptr<message> msg;
  bool delivered = false;
};

struct recovery_report {
  size_t segments = 0;
  size_t records = 0;           // every record read, valid or not
  size_t truncated_bytes = 0;   // torn tail cut away
  size_t corrupt_records = 0;   // skipped in the middle of a segment
  size_t removed_segments = 0;  // segments without a valid record, deleted
};

class segment_store {
 public:
  struct options {
    uint64_t segment_bytes = 8 << 20;
    uint32_t compact_min_records = 2000;  // compact a segment only when it has more records
  };

  /// `label` names the queue in log lines. Nothing is touched on disk until recover().
  segment_store(std::string dir, std::string label, options opts);
  segment_store(std::string dir, std::string label)
      : segment_store(std::move(dir), std::move(label), options{}) {}
  ~segment_store();

  segment_store(const segment_store&) = delete;
  segment_store& operator=(const segment_store&) = delete;

  /// Scans the folder: removes leftover .tmp files, truncates a torn tail, reports (logs) corrupt
  /// records with segment and offset, deletes segments with nothing valid. Returns the valid
  /// messages ordered by sequence number.
  std::vector<recovered_message> recover(recovery_report& report);

  /// Highest sequence number found on disk (0 if none); new records must use larger ones.
  uint64_t max_seq() const { return max_seq_; }

  void append(uint64_t seq, const message& m);
  /// Writes what is buffered and pending; with `durable`, fdatasyncs what was written. False
  /// when some record of this batch is not safely stored (see failed()).
  bool sync(bool durable);
  bool has_pending_work() const { return !buffer_.empty() || !flag_edits_.empty(); }

  /// Sequence numbers the last sync() could not store (to nack); replaced by the next sync().
  const std::vector<uint64_t>& failed() const { return failed_; }
  const std::string& last_error() const { return last_error_; }

  void remove(uint64_t seq);
  void mark_delivered(uint64_t seq);
  bool holds(uint64_t seq) const { return index_.count(seq) != 0; }

  /// True when some closed segment is worth compacting.
  bool wants_compaction() const { return !candidates_.empty(); }
  /// Compacts one segment (a bounded step); returns false on an I/O error (logged).
  bool compact_one();

  /// Deletes every file and the folder (the queue was deleted).
  void destroy();

  uint64_t bytes_on_disk() const;
  size_t segment_count() const { return segments_.size(); }

 private:
  struct segment {
    uint64_t first_seq = 0;
    int fd = -1;
    uint64_t size = 0;  // bytes on disk
    uint32_t records = 0;
    uint32_t valid = 0;
  };
  struct location {
    uint64_t segment;  // first_seq of its segment
    uint64_t offset;
  };
  struct flag_edit {
    uint64_t seq;
    uint8_t clear;  // bits to clear
    uint8_t set;    // bits to set
  };

  std::string path_of(uint64_t first_seq, const char* suffix = ".seg") const;
  segment& open_segment(uint64_t first_seq);
  bool write_buffer();
  void apply_flag_edits();
  void after_invalidate(segment& seg);
  void drop_segment(uint64_t first_seq);
  void ensure_dir();

  std::string dir_;
  std::string label_;
  options opts_;
  bool dir_ready_ = false;
  std::map<uint64_t, segment> segments_;
  std::unordered_map<uint64_t, location> index_;
  uint64_t max_seq_ = 0;
  uint64_t active_ = 0;  // first_seq of the segment appended to; 0 = none yet

  std::string buffer_;  // records appended, not yet written
  std::vector<uint64_t> buffered_seqs_;
  uint64_t buffer_base_ = 0;  // offset in the active segment where buffer_ starts
  std::vector<flag_edit> flag_edits_;
  std::vector<int> unsynced_fds_;
  std::vector<uint64_t> candidates_;
  std::vector<uint64_t> batch_seqs_;  // appended since the last sync
  std::vector<uint64_t> failing_;     // of this batch, known not to be stored
  std::vector<uint64_t> failed_;      // the last sync's failures
  std::string last_error_;
};

}  // namespace warren::persistence
