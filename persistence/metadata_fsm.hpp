// metadata_fsm: the cluster's metadata as the state machine of a Raft log (libraft; issue 33).
// Each committed entry is one batch of LMDB changes (metadata_log_codec) and is applied, in log
// order, into this member's LMDB together with its index, in one transaction; or only its index
// when one of its conditions (a key present or absent) does not hold, the same on every member.
// LMDB is the state machine: raft replays a restarted member's log from its last snapshot, and the
// entries LMDB already holds are skipped by their index. A snapshot is every record with the index
// applied.
//
// Grouped commits (group_commits, which metadata_log turns on): the entries raft applies in one
// loop iteration are kept and written by write_applied() in one transaction, so that they cost
// one sync instead of one each. Raft counts them applied before LMDB holds them, which is safe:
// they are in this member's raft log, and a member that stops first is given them again. Until
// they are written nothing may be told of them: their proposers' outcome says `deferred`, the
// change listener hears of them only once written, and applied_durably() stays behind them.
// A snapshot, taken or restored, writes them first: raft names it after its own applied index.
//
// libraft is not thread-safe: one thread drives the raft instance and so this object.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_log_codec.hpp"

extern "C" {
#include <raft.h>
}

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace warren::persistence {

class metadata_fsm {
 public:
  explicit metadata_fsm(lmdb_store& store);

  metadata_fsm(const metadata_fsm&) = delete;
  metadata_fsm& operator=(const metadata_fsm&) = delete;

  /// What raft_init (or the test fixture) takes; valid as long as this object.
  raft_fsm* fsm() { return &fsm_; }
  /// The raft instance that drives this state machine: an entry's index is the one after its
  /// last applied index while the entry is applied.
  void attach(raft* r) { raft_ = r; }

  /// What an applied entry changed, in log order, on raft's thread: the changes of an entry
  /// applied (`whole` false), or every record of the log's tables after a seed or a snapshot
  /// replaced them (`whole` true). For the node to bring what it holds in memory in line.
  using change_listener = std::function<void(const std::vector<meta_mutation>&, bool whole)>;
  void on_change(change_listener listener) { listener_ = std::move(listener); }

  /// What applying an entry did, as its proposer's callback gets it (raft_apply's `result`):
  /// refused when a condition did not hold, so that nothing but its index was stored.
  struct outcome {
    bool refused = false;
    size_t failed_condition = 0;  // which one, when refused
    bool seed_ignored = false;    // a seed, after the log's first one
    bool deferred = false;        // grouped: known once written (take_written)
  };

  /// Keeps the entries applied until write_applied() writes them together (see above).
  void group_commits(bool on) { grouped_ = on; }
  /// Writes the entries applied since the last write, in one transaction (per max_group
  /// entries); true when LMDB holds every entry applied. A failure (the disk) is logged and the
  /// entries are kept to be written again at the next call; raft's further entries are kept too,
  /// up to max_unwritten, and then refused (RAFT_IOERR).
  bool write_applied();
  static constexpr size_t max_group = 1024;
  static constexpr size_t max_unwritten = 65536;
  /// The outcomes of the entries written since the last call, by index, in log order.
  std::vector<std::pair<uint64_t, outcome>> take_written();
  /// The last index applied whose changes LMDB holds.
  uint64_t applied_durably() const;

  /// Entries that did not decode, or held a change LMDB could not store or read back (applied
  /// as empty: every member skips the same ones).
  uint64_t undecodable() const { return undecodable_; }
  /// Snapshots that replaced what LMDB held (one from another member, or this member's own
  /// when it is ahead of LMDB; never one LMDB is already past).
  uint64_t snapshots_restored() const { return restored_; }

 private:
  static int apply(raft_fsm* fsm, const raft_buffer* buf, void** result);
  static int snapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs);
  static int restore(raft_fsm* fsm, raft_buffer* buf);
  int keep_unwritten(uint64_t index, metadata_entry entry, void** result);
  bool write_group(size_t count);

  lmdb_store& store_;
  raft* raft_ = nullptr;
  raft_fsm fsm_{};
  outcome outcome_;  // the last entry's
  struct unwritten_entry {
    uint64_t index;
    metadata_entry entry;
  };
  bool grouped_ = false;
  std::vector<unwritten_entry> unwritten_;  // grouped: applied, not yet in LMDB, in log order
  std::vector<std::pair<uint64_t, outcome>> written_;  // grouped: until take_written()
  bool write_failing_ = false;  // the last write_applied() failed (logged once)
  change_listener listener_;
  uint64_t undecodable_ = 0;
  uint64_t restored_ = 0;
};

}  // namespace warren::persistence
