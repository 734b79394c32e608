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
// Paging: the store keeps in memory only a 16-byte slot per record (sequence number, offset,
// length, live and delivered bits), so a queue can leave message bodies on disk and read them
// back in order with read_live(), checking each frame's checksum as it goes. Records of
// transient messages (a queue paging them out) are discarded at recovery, as transient messages
// are at a restart. A closed segment gets an index file (<first>.idx) once it is synced, so that
// a restart can index paged-out messages without reading them: recovery trusts it only for
// messages it leaves on disk, only for a segment that is not the newest, and only while it
// checks out and names the segment's current size; their checksums are then checked when they
// are read back.
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
  int64_t enqueued_at_ms = 0;  // wall clock; 0 when the record has no enqueue time
};

/// What recover() found: the first live messages, decoded, up to a memory limit; the rest stay
/// on disk (paged), to be read with read_live().
struct recovered_queue {
  std::vector<recovered_message> in_memory;  // ordered by sequence number
  uint64_t paged_from = 0;                   // first sequence number left on disk; 0 = none
  uint64_t paged_count = 0;
  uint64_t paged_body_bytes = 0;
};

/// What read_live() read back.
struct read_result {
  std::vector<recovered_message> messages;  // ordered by sequence number
  uint64_t next_seq = 0;         // where the next read goes on (past the last record looked at)
  size_t lost = 0;               // records that no longer checked out (reported, dropped)
  uint64_t lost_body_bytes = 0;  // their body bytes, as recorded when they were appended
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
  size_t transient = 0;         // records of transient messages (paged out), discarded
};

class segment_store {
 public:
  struct options {
    uint64_t segment_bytes = 8 << 20;
    uint32_t compact_min_records = 2000;  // compact a segment only when it has more records
    bool keep_transient = false;  // a stream's: records of transient messages survive restarts
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
  /// The same, decoding messages only until their bodies and `per_message_bytes` each add up
  /// to `memory_limit`: from there on, every live message stays on disk.
  recovered_queue recover(recovery_report& report, uint64_t memory_limit,
                          uint64_t per_message_bytes);

  /// Highest sequence number found on disk (0 if none); new records must use larger ones.
  uint64_t max_seq() const { return max_seq_; }

  /// Sequence numbers must grow from one append to the next. With `enqueued_at_ms`, the
  /// record keeps its enqueue time (see segment_format).
  void append(uint64_t seq, const message& m, int64_t enqueued_at_ms = 0);

  /// Reads back live records from sequence number `from` on, in order: at most `max_count`,
  /// and stopping once `max_bytes` of payload were read. A record that no longer checks out (or
  /// cannot be read) is reported with its file and offset, dropped from the store, counted in
  /// `lost`, and its segment is never compacted or deleted.
  read_result read_live(uint64_t from, size_t max_count, uint64_t max_bytes);

  /// Removes every live record from `from` on (a purge of what is paged out); returns how
  /// many. Segments left with nothing live are deleted without writing a mark per record.
  uint64_t remove_from(uint64_t from);
  /// Writes what is buffered and pending; with `durable`, fdatasyncs what was written. False
  /// when some record of this batch is not safely stored (see failed()).
  bool sync(bool durable);
  bool has_pending_work() const { return !buffer_.empty() || !pending_marks_.empty(); }

  /// Sequence numbers the last sync() could not store (to nack); replaced by the next sync().
  const std::vector<uint64_t>& failed() const { return failed_; }
  const std::string& last_error() const { return last_error_; }
  /// Why an fdatasync (of a segment or of the folder) failed, or empty while none has. After
  /// such a failure the kernel may have dropped the pages it could not write and marked them
  /// clean, so a later sync could succeed without them (PostgreSQL's "fsyncgate"): nothing this
  /// store holds may be confirmed again until a restart reads back what is really on disk.
  const std::string& sync_failure() const { return sync_failure_; }

  void remove(uint64_t seq);
  void mark_delivered(uint64_t seq);
  /// Appends the pending marks to their mark files now (no fsync).
  void write_marks();
  bool holds(uint64_t seq) const { return find_slot(seq) != nullptr; }

  /// True when some closed segment is worth compacting.
  bool wants_compaction() const { return !candidates_.empty(); }
  /// Compacts one segment (a bounded step); returns false on an I/O error (logged). A segment
  /// that lost live records since it was last looked at is passed over this time: consumers
  /// are draining it, and it is likely deleted whole before long.
  bool compact_one();
  /// Segments compaction took on so far (a step that passed every candidate over leaves it).
  uint64_t compactions() const { return compactions_; }

  /// Deletes every file and the folder (the queue was deleted).
  void destroy();

  // Streams: a log whose records stay live; retention removes whole segments from its head.
  struct extent {
    uint64_t first_seq;  // of its first record
    uint64_t bytes;      // of its .seg file
  };
  /// The segments that hold records, oldest first.
  std::vector<extent> extents() const;
  /// Deletes the oldest segment whole (retention), unless it is the one being appended to or
  /// it has records not written yet; true when one went.
  bool drop_oldest();
  /// Sequence number of the oldest record kept; 0 when there is none.
  uint64_t first_seq() const;

  uint64_t bytes_on_disk() const;
  size_t segment_count() const { return segments_.size(); }
  /// Bytes the store's index holds in memory (its slots), for the node's memory accounting.
  uint64_t index_bytes() const;

 private:
  // One record of a segment: 16 bytes in memory per stored message.
  struct slot {
    uint64_t seq;
    uint32_t offset;         // of its frame in the .seg file (segments stay under 4 GiB)
    uint32_t length : 29;    // payload bytes (at most format::max_frame)
    uint32_t live : 1;       // not acked (nor dropped)
    uint32_t delivered : 1;  // may have reached a consumer
    uint32_t transient : 1;  // a transient message paged out: not kept across a restart
  };
  static_assert(sizeof(slot) == 16, "a queue of millions keeps one per message");
  struct segment {
    uint64_t first_seq = 0;
    uint64_t size = 0;          // bytes in the .seg file
    uint64_t marks_size = 0;    // bytes in the .ack file
    uint32_t records = 0;       // message records in the file, live or acked
    uint32_t valid = 0;         // live ones
    uint32_t valid_listed = 0;  // live ones when compaction last looked at it
    bool damaged = false;       // recovery found damage: kept as it is, never compacted or deleted
    std::vector<slot> slots;    // every record of the file, by sequence number
  };
  struct pending_mark {
    uint64_t seq;
    uint64_t segment;
    bool acked;  // else delivered
  };

  slot* find_slot(uint64_t seq, segment** in = nullptr);
  const slot* find_slot(uint64_t seq) const;
  void read_run(segment& seg, const std::vector<slot*>& run, read_result& out);
  void drop_unreadable(segment& seg, slot& s, const std::string& why, read_result& out);

  // <dir>/<20-digit first_seq><suffix>
  std::string file_path(uint64_t first_seq, const char* suffix) const;
  std::string seg_path(uint64_t first_seq) const { return file_path(first_seq, ".seg"); }
  std::string ack_path(uint64_t first_seq) const { return file_path(first_seq, ".ack"); }
  std::string idx_path(uint64_t first_seq) const { return file_path(first_seq, ".idx"); }
  void close_active();
  void write_index(uint64_t first_seq, uint64_t size,
                   const std::vector<format::index_entry>& entries);
  void write_pending_indexes();
  void forget_files();  // closes the cached descriptors of every segment
  void create_segment(uint64_t first_seq);
  void write_buffer();
  void write_marks_of(segment& seg, const std::vector<uint64_t>& acked,
                      const std::vector<uint64_t>& delivered);
  void fail_buffer(const std::string& error);
  void after_invalidate(segment& seg);
  bool compactable(const segment& seg) const;

  // compaction, one step at a time (segment_compaction.cpp)
  struct compacted;
  uint64_t next_compaction(size_t& looks);
  bool rewrite_live(uint64_t first, segment& seg, compacted& out);
  bool replace_files(uint64_t first, const compacted& c);
  void adopt_compacted(uint64_t first, segment& seg, compacted&& c);
  void roll_if_wasted();
  void drop_segment(uint64_t first_seq);
  void ensure_dir();
  void sync_written(bool durable);

  // recovery, one segment at a time
  struct listing;
  struct recovery_budget;
  listing list_folder(recovery_report& report);
  void recover_segment(uint64_t first, uint64_t limit, bool last, bool has_marks, bool has_index,
                       recovered_queue& out, recovery_budget& budget, recovery_report& report);
  bool read_index(uint64_t first, uint64_t size, std::vector<format::index_entry>& entries);
  void keep_recovered(segment&& seg, recovery_report& report);
  struct segment_marks;
  format::scan_result scan_records(uint64_t first, uint64_t limit, bool last, std::string& data,
                                   segment& seg, recovery_report& report);
  segment_marks read_marks(uint64_t first, uint64_t limit, bool has_marks, segment& seg,
                           recovery_report& report);
  void add_recovered_slot(segment& seg, const format::index_entry& e, const segment_marks& marks);
  void take_indexed(const std::vector<format::index_entry>& entries, uint64_t limit,
                    const segment_marks& marks, segment& seg, recovered_queue& out,
                    recovery_report& report);
  void take_records(uint64_t first, const std::string& data, const format::scan_result& scan,
                    const segment_marks& marks, segment& seg, recovered_queue& out,
                    recovery_budget& budget, recovery_report& report,
                    std::vector<format::index_entry>& entries);
  void report_damage(const std::string& file, uint64_t offset, uint64_t bytes, const char* what);

  std::string dir_;
  std::string label_;
  options opts_;
  std::shared_ptr<file_cache> files_;
  bool dir_ready_ = false;
  bool dir_dirty_ = false;  // a file was created or removed since the folder was last synced
  std::map<uint64_t, segment> segments_;
  uint64_t slot_count_ = 0;  // slots in all segments
  uint64_t max_seq_ = 0;
  uint64_t active_ = 0;  // first_seq of the segment appended to; 0 = none yet

  // The index entries of the active segment, and of closed segments whose index waits for
  // their records to be synced.
  std::vector<format::index_entry> active_index_;
  std::map<uint64_t, std::vector<format::index_entry>> unindexed_;

  std::string buffer_;  // records appended, not yet written
  std::vector<uint64_t> buffered_seqs_;
  std::vector<pending_mark> pending_marks_;
  std::set<uint64_t> unsynced_;  // segments written since their last fdatasync
  std::vector<uint64_t> candidates_;
  uint64_t compactions_ = 0;
  std::vector<uint64_t> batch_seqs_;  // appended since the last sync
  std::vector<uint64_t> failing_;     // of this batch, known not to be stored
  std::vector<uint64_t> failed_;      // the last sync's failures
  std::string last_error_;
  std::string sync_failure_;
};

}  // namespace warren::persistence
