// stream_group: one consumer group of a stream, as bookkeeping (no messages sent).
//
// The consumers of a group share one cursor: each message of the stream goes to one of them.
// Offsets handed out and not acked yet are `in_flight`; those of a consumer that went away (or
// were nacked with requeue) wait in `redeliver` and go out again before the cursor moves on.
// The group is done with every offset below its frontier (the smallest offset in flight,
// waiting, or not handed out yet), which is what a commit stores: frontier - 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace warren {

class stream_group {
 public:
  explicit stream_group(int64_t committed = -1) : committed_(committed), stored_(committed) {}

  /// The last offset the group is done with, as last committed; -1 = none yet. Its next first
  /// consumer resumes after it.
  int64_t committed() const { return committed_; }
  void set_committed(int64_t offset) { committed_ = offset; }
  /// The same, once it is on disk: what listings show.
  int64_t stored() const { return stored_; }
  void set_stored(int64_t offset) { stored_ = offset; }

  /// Where a group starts when its first consumer attaches without an offset: after what it
  /// committed, or at `next` when it never committed.
  uint64_t resume_at(uint64_t next) const {
    return committed_ >= 0 ? static_cast<uint64_t>(committed_) + 1 : next;
  }
  /// Starts reading at `offset`, forgetting what waited for redelivery (its first consumer
  /// attached; nothing can be in flight then).
  void position(uint64_t offset);

  uint64_t cursor() const { return cursor_; }
  /// Retention removed everything below `first`: nothing before it can be handed out.
  void skip_to(uint64_t first);

  /// Past records that no longer exist (damage found on reading).
  void move_cursor(uint64_t offset) { cursor_ = offset > cursor_ ? offset : cursor_; }
  /// `offset` waits for redelivery no more (it is no longer in the log).
  void forget(uint64_t offset) {
    redeliver_.erase(offset);
    in_flight_.erase(offset);
  }

  /// The next offset to hand out, below `end` (the first offset not readable yet): a waiting
  /// redelivery first (its flag: true), else the cursor. False when there is none.
  bool next(uint64_t end, uint64_t& offset, bool& redelivered) const;
  /// `offset` (as next() gave it) went out.
  void handed_out(uint64_t offset, bool redelivered);
  /// An acked (or rejected) delivery; true when it was in flight.
  bool settled(uint64_t offset);
  /// Back to the group, to go out again (its consumer left, or it was nacked with requeue).
  void give_back(uint64_t offset);

  /// The last offset every earlier one of which the group is done with; -1 = none.
  int64_t done_through() const;

  std::vector<uint64_t>& members() { return members_; }
  const std::vector<uint64_t>& members() const { return members_; }
  size_t& turn() { return turn_; }

  uint64_t acks_since_commit = 0;
  int64_t last_commit_ms = 0;

 private:
  int64_t committed_;
  int64_t stored_;
  uint64_t cursor_ = 0;
  std::set<uint64_t> in_flight_;
  std::set<uint64_t> redeliver_;
  std::vector<uint64_t> members_;  // consumer keys, in the order they joined
  size_t turn_ = 0;
};

}  // namespace warren
