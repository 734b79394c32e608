// ready_list: a queue's ready messages in the order consumers get them — by priority, highest
// first (queues declared with x-max-priority), then by arrival — with the total of their body
// sizes for x-max-length-bytes. Pure data: the queue actor owns one.
//
// A message's priority is its `priority` property capped at the queue's maximum (RabbitMQ's
// rule); in a queue without priorities every message is at level 0 and the list is one FIFO.
// Per-message TTL applies at the head of each priority level.
#pragma once

#include "core/message.hpp"

#include <cstdint>
#include <deque>
#include <vector>

namespace warren {

class ready_list {
 public:
  // 32 bytes: a queue holds one per ready message.
  struct entry {
    message_ptr msg;
    uint64_t seq : 63;  // arrival order, kept across requeues
    uint64_t redelivered : 1;
    int64_t expires_at;  // steady clock ms; 0 = never
  };

  explicit ready_list(uint8_t max_priority = 0) : levels_(size_t{max_priority} + 1) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  uint64_t bytes() const { return bytes_; }
  /// What they keep on the heap beyond their bodies (message::heap_bytes).
  uint64_t heap_bytes() const { return heap_bytes_; }

  /// The message consumers get next. Only when not empty.
  const entry& front() const { return levels_[top()].front(); }
  entry take_front();

  /// A new arrival: behind every message of its priority.
  void push_back(entry e);
  /// Requeued messages: each back at its place among the others of its priority, by arrival
  /// (seq), as RabbitMQ puts them back; each level stays in seq order. A batch is merged with
  /// the part of its level it reaches into, so interleaved batches (consumers that got every
  /// other message, leaving together) cost that part and the batch, not an insert each.
  void put_back(std::vector<entry> entries);
  void put_back(entry e);

  /// Takes out every message at the head of a level whose expiry is before `now`.
  void take_expired(int64_t now, std::vector<entry>& out);
  /// The earliest expiry among the levels' heads; 0 when none expires.
  int64_t next_expiry() const;

  template <class Pred>
  void remove_if(Pred pred) {
    for (auto& level : levels_) {
      for (auto i = level.begin(); i != level.end();) {
        if (!pred(*i)) {
          ++i;
          continue;
        }
        forget(*i);
        i = level.erase(i);
      }
    }
  }

  /// Visits every message in delivery order.
  template <class F>
  void for_each(F f) const {
    for (auto l = levels_.rbegin(); l != levels_.rend(); ++l)
      for (const auto& e : *l) f(e);
  }

  void clear();

 private:
  size_t level_of(const message& m) const;
  size_t top() const;
  void forget(const entry& e);

  std::vector<std::deque<entry>> levels_;  // index = priority
  size_t size_ = 0;
  uint64_t bytes_ = 0;
  uint64_t heap_bytes_ = 0;
};

}  // namespace warren
