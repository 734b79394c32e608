// segment_store: the message files of one durable queue (DESIGN §5, format in segment_format).
//
// Messages go to append-only segment files (<first>.seg) rolled at a size limit; what happens
// to them afterwards (acked, delivered) goes to the segment's mark file (<first>.ack), also
// append-only. No byte of a file is ever rewritten in place: a damaged byte is caught by a
// checksum wherever it falls, and the worst a damaged mark can do is bring a message back.
//
// Writes are batched: append() fills a buffer; sync() writes it with one write, appends the
// pending marks with one write per segment, and with `durable` issues one fdatasync per segment
// written (group commit). Marks are not synced: losing one in a crash only means a message comes
// back (at-least-once), never that a confirmed message is lost. write_marks() writes pending
// marks at once, so that a delivery can be handed out only after its delivered mark is in the
// file (a kill -9 then brings it back marked redelivered).
//
// Recovery never writes over what it finds: every start appends to a new segment; unknown files
// are reported and left alone; a damaged frame costs its own bytes (the scan resumes at the next
// frame that checks out); only a torn tail of a file is cut off; a segment with damage is never
// compacted or deleted. A folder that cannot be read makes recover() throw
// storage_unavailable, and the queue must then not write to it.
//
// File descriptors come from a node-wide file_cache, so a node with thousands of queues stays
// within its descriptor limit.
//
// Caveats: an I/O error (ENOSPC, EIO, EMFILE) makes sync() return false; the records of that
// batch are dropped from the store (the caller nacks them) and the segment is cut back to its
// last good size, so a later sync can succeed once the cause is gone.
#pragma once

#include "core/message.hpp"
#include "persistence/file_cache.hpp"
#include "persistence/segment_format.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace warren::persistence {

enum class fsync_policy : uint8_t { batch, always, never };

bool parse_fsync_policy(const std::string& text, fsync_policy& out);

/// The queue's folder cannot be read (permissions, descriptors, I/O): its files are left as
/// they are and nothing may be written there.
struct storage_unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct recovered_message {
  uint64_t seq = 0;
  std::shared_ptr<message> msg;
  bool delivered = false;
};

struct recovery_report {
  size_t segments = 0;
  size_t records = 0;          // message frames that checked out, live or acked
  size_t truncated_bytes = 0;  // torn tails cut away
  size_t damaged_bytes = 0;    // skipped in the middle of files (kept on disk)
  size_t damaged_spans = 0;
  size_t undecodable = 0;       // frames that checked out but did not decode
  size_t ignored_files = 0;     // unknown names, left alone
  size_t unsure_marks = 0;      // segments whose marks were lost or damaged
  size_t removed_segments = 0;  // segments without a live message, deleted
};

class segment_store {
 public:
  struct options {
    uint64_t segment_bytes = 8 << 20;
    uint32_t compact_min_records = 2000;  // compact a segment only when it has more records
  };

  /// `label` names the queue in log lines. Nothing is touched on disk until recover(). Without
  /// a cache, the store makes a small one of its own.
  segment_store(std::string dir, std::string label, options opts,
                std::shared_ptr<file_cache> files = nullptr);
  segment_store(std::string dir, std::string label)
      : segment_store(std::move(dir), std::move(label), options{}) {}
  ~segment_store();

  segment_store(const segment_store&) = delete;
  segment_store& operator=(const segment_store&) = delete;

  /// Loads the folder (see above). Returns the live messages ordered by sequence number.
  /// Throws storage_unavailable when the folder or one of its files cannot be read.
  std::vector<recovered_message> recover(recovery_report& report);

  /// Highest sequence number found on disk (0 if none); new records must use larger ones.
  uint64_t max_seq() const { return max_seq_; }

  void append(uint64_t seq, const message& m);
  /// Writes what is buffered and pending; with `durable`, fdatasyncs what was written. False
  /// when some record of this batch is not safely stored (see failed()).
  bool sync(bool durable);
  bool has_pending_work() const { return !buffer_.empty() || !pending_marks_.empty(); }

  /// Sequence numbers the last sync() could not store (to nack); replaced by the next sync().
  const std::vector<uint64_t>& failed() const { return failed_; }
  const std::string& last_error() const { return last_error_; }

  void remove(uint64_t seq);
  void mark_delivered(uint64_t seq);
  /// Appends the pending marks to their mark files now (no fsync).
  void write_marks();
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
    uint64_t size = 0;        // bytes in the .seg file
    uint64_t marks_size = 0;  // bytes in the .ack file
    uint32_t records = 0;     // message records in the file, live or acked
    uint32_t valid = 0;       // live ones
    bool damaged = false;     // recovery found damage: kept as it is, never compacted or deleted
  };
  struct location {
    uint64_t segment;  // first_seq of its segment
    uint64_t offset : 63;
    uint64_t delivered : 1;
  };
  struct pending_mark {
    uint64_t seq;
    uint64_t segment;
    bool acked;  // else delivered
  };

  // <dir>/<20-digit first_seq><suffix>
  std::string file_path(uint64_t first_seq, const char* suffix) const;
  std::string seg_path(uint64_t first_seq) const { return file_path(first_seq, ".seg"); }
  std::string ack_path(uint64_t first_seq) const { return file_path(first_seq, ".ack"); }
  void forget_files();  // closes the cached descriptors of every segment
  void create_segment(uint64_t first_seq);
  void write_buffer();
  void write_marks_of(segment& seg, const std::vector<uint64_t>& acked,
                      const std::vector<uint64_t>& delivered);
  void fail_buffer(const std::string& error);
  void after_invalidate(segment& seg);
  bool compactable(const segment& seg) const;
  void roll_if_wasted();
  void drop_segment(uint64_t first_seq);
  void ensure_dir();
  void sync_written(bool durable);

  // recovery, one segment at a time
  struct listing;
  listing list_folder(recovery_report& report);
  void recover_segment(uint64_t first, uint64_t limit, bool last, bool has_marks,
                       std::vector<recovered_message>& out, recovery_report& report);
  struct segment_marks;
  format::scan_result scan_records(uint64_t first, uint64_t limit, bool last, std::string& data,
                                   segment& seg, recovery_report& report);
  segment_marks read_marks(uint64_t first, uint64_t limit, bool has_marks, segment& seg,
                           recovery_report& report);
  void take_records(uint64_t first, const std::string& data, const format::scan_result& scan,
                    const segment_marks& marks, segment& seg, std::vector<recovered_message>& out,
                    recovery_report& report);
  void report_damage(const std::string& file, uint64_t offset, uint64_t bytes, const char* what);

  std::string dir_;
  std::string label_;
  options opts_;
  std::shared_ptr<file_cache> files_;
  bool dir_ready_ = false;
  bool dir_dirty_ = false;  // a file was created or removed since the folder was last synced
  std::map<uint64_t, segment> segments_;
  std::unordered_map<uint64_t, location> index_;
  uint64_t max_seq_ = 0;
  uint64_t active_ = 0;  // first_seq of the segment appended to; 0 = none yet

  std::string buffer_;  // records appended, not yet written
  std::vector<uint64_t> buffered_seqs_;
  std::vector<pending_mark> pending_marks_;
  std::set<uint64_t> unsynced_;  // segments written since their last fdatasync
  std::vector<uint64_t> candidates_;
  std::vector<uint64_t> batch_seqs_;  // appended since the last sync
  std::vector<uint64_t> failing_;     // of this batch, known not to be stored
  std::vector<uint64_t> failed_;      // the last sync's failures
  std::string last_error_;
};

}  // namespace warren::persistence
