// consumer_set: a queue's consumers and whose turn it is. Pure bookkeeping (no messages sent):
// the queue actor asks it who gets the next message and sends the deliveries itself.
//
// Consumers are kept sorted by priority (x-priority), highest first, a newcomer behind its
// equals. The next message goes to the highest-priority consumers that have credit, in turn
// among equals; a single-active-consumer queue serves only the first consumer (by priority,
// then age) until it goes.
#pragma once

#include "actors/common/protocol.hpp"

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace warren {

class consumer_set {
 public:
  struct consumer {
    uint64_t key;  // the queue's name for it, never reused
    consumer_spec spec;
    uint32_t credit;   // deliveries it may still be sent
    uint32_t unacked;  // deliveries it holds
  };

  /// Adds a consumer with spec.initial_credit; returns its key.
  uint64_t add(consumer_spec spec);

  consumer* find(uint64_t key);
  consumer* find(const caf::actor& conn, uint16_t channel, const std::string& tag);

  /// Removes the consumer; its key, or nothing when there was none.
  std::optional<uint64_t> remove(const caf::actor& conn, uint16_t channel, const std::string& tag);
  /// Removes every consumer of `conn` (on `channel` only, when given); how many went.
  size_t remove_all(const caf::actor_addr& conn, std::optional<uint16_t> channel);

  /// The consumer the next message goes to, taking its turn; nothing when none has credit.
  consumer* pick(bool single_active);
  /// The last pick's consumer got no message after all (it had expired): it keeps its turn.
  void give_turn_back() { --round_robin_; }

  bool any_exclusive() const;
  bool empty() const { return consumers_.empty(); }
  size_t size() const { return consumers_.size(); }
  const std::vector<consumer>& all() const { return consumers_; }

 private:
  std::vector<consumer> consumers_;
  size_t round_robin_ = 0;
  uint64_t next_key_ = 0;
};

}  // namespace warren
