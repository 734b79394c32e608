// memory_ledger: the bytes the node holds for messages, counted rather than guessed from the
// resident set size (which malloc does not give back, so an alarm judged on it never clears).
//
// Queues report what their ready lists and unacked messages hold (bodies, what the messages
// keep on the heap, and a per-message overhead) and what their stores' indexes take; the AMQP
// door reports uncommitted transactions; the resource alarm compares the total with the
// memory limit, and queues page new messages out to disk while the queued total is over the
// node-wide budget. Each queue holds a memory_share, which takes its figures back out of the
// ledger when the queue goes.
//
// Thread safety: queues on different scheduler threads update one ledger; counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace warren {

/// What a message held in memory costs beyond its body: its ready entry, the message object,
/// its shared pointer's control block and malloc's own overhead. bench/README.md measured 278 B
/// of resident memory per queued 64 B message (1M queued), about 200 beyond the body.
constexpr uint64_t message_overhead_bytes = 200;

struct memory_ledger {
  std::atomic<int64_t> queued{0};  // messages in queues' ready lists and unacked, in memory
  std::atomic<int64_t> index{0};   // queue stores' indexes of what is on disk
  // What client doors hold for messages not yet routed (uncommitted AMQP transactions): judged
  // by the alarm, but no reason for queues to page out.
  std::atomic<int64_t> doors{0};

  uint64_t total() const {
    auto t = queued.load(std::memory_order_relaxed) + index.load(std::memory_order_relaxed) +
             doors.load(std::memory_order_relaxed);
    return t > 0 ? static_cast<uint64_t>(t) : 0;
  }
  uint64_t queued_bytes() const {
    auto q = queued.load(std::memory_order_relaxed);
    return q > 0 ? static_cast<uint64_t>(q) : 0;
  }
};

/// One queue's (or door's) part of the ledger: set() replaces its figures, the destructor
/// withdraws them.
class memory_share {
 public:
  memory_share() = default;
  explicit memory_share(std::shared_ptr<memory_ledger> ledger) : ledger_(std::move(ledger)) {}
  memory_share(const memory_share&) = delete;
  memory_share& operator=(const memory_share&) = delete;
  memory_share& operator=(memory_share&& other) noexcept {
    set(0, 0, 0);
    ledger_ = std::move(other.ledger_);
    queued_ = other.queued_;
    index_ = other.index_;
    doors_ = other.doors_;
    other.queued_ = other.index_ = other.doors_ = 0;
    return *this;
  }
  ~memory_share() { set(0, 0, 0); }

  void set(uint64_t queued, uint64_t index, uint64_t doors = 0) {
    if (!ledger_) return;
    auto q = static_cast<int64_t>(queued), i = static_cast<int64_t>(index);
    auto d = static_cast<int64_t>(doors);
    if (q != queued_) ledger_->queued.fetch_add(q - queued_, std::memory_order_relaxed);
    if (i != index_) ledger_->index.fetch_add(i - index_, std::memory_order_relaxed);
    if (d != doors_) ledger_->doors.fetch_add(d - doors_, std::memory_order_relaxed);
    queued_ = q;
    index_ = i;
    doors_ = d;
  }
  uint64_t queued() const { return static_cast<uint64_t>(queued_); }

 private:
  std::shared_ptr<memory_ledger> ledger_;
  int64_t queued_ = 0;
  int64_t index_ = 0;
  int64_t doors_ = 0;
};

}  // namespace warren
