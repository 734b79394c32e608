// channel_credit: the prefetch limits of one channel's consumers (AMQP basic.qos), as credit.
//
// A queue sends a consumer messages only while it holds credit; the channel hands credit out and
// takes it back as deliveries are settled. What a consumer has out is its credit still at the
// queue plus its deliveries not yet settled. Limits, as RabbitMQ counts them:
//   - per consumer (qos global=false, given when the consumer starts): its own out <= prefetch;
//   - per channel (qos global=true): the out of all its consumers together <= the global limit;
//   - both at once when both are set.
// Consumers with no-ack, or with neither limit, are not tracked: the connection gives them
// credit as their deliveries reach the network.
//
// Pure state, no actors: every call returns the credit grants {consumer tag, n} to send.
//
// Under a global limit each consumer holds at most its share (the limit divided among the
// consumers) of credit, and freed credit goes round starting with the consumer that settled.
//
// Caveats: credit already at a queue cannot be taken back, so lowering the global limit takes
// effect as deliveries are settled, and a consumer of an idle queue may sit on its share. A
// cancelled consumer's unsettled deliveries stop counting when it goes (they are settled like
// gets).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace warren {

class channel_credit {
 public:
  using grants = std::vector<std::pair<std::string, uint32_t>>;

  /// Sets (0: removes) the channel-wide limit; may free credit for consumers.
  grants set_global(uint32_t limit);
  uint32_t global() const { return global_; }

  /// Whether a consumer with these settings is limited by acks (and so tracked here).
  bool limited(bool no_ack, uint32_t prefetch) const {
    return !no_ack && (prefetch > 0 || global_ > 0);
  }
  bool tracks(const std::string& tag) const { return consumers_.count(tag) != 0; }

  /// A limited consumer starts; returns the credit it starts with (possibly 0).
  uint32_t add(const std::string& tag, uint32_t prefetch);

  /// The consumer is gone; its credit returns to the channel.
  grants remove(const std::string& tag);

  /// `n` deliveries reached the consumer: credit became unsettled deliveries.
  void delivered(const std::string& tag, uint32_t n);

  /// `n` of the consumer's deliveries were settled (acked, rejected or requeued).
  grants settled(const std::string& tag, uint32_t n);

 private:
  struct consumer {
    uint32_t prefetch = 0;  // 0: no limit of its own
    uint32_t credit = 0;    // at the queue
    uint32_t unacked = 0;   // delivered, not settled
  };

  uint64_t out() const;
  uint64_t pool_free() const;  // what the global limit still allows
  uint64_t headroom(const consumer& c) const;
  uint64_t fair_room(const consumer& c) const;
  uint32_t give(consumer& c, uint64_t wanted);
  grants rebalance();

  uint32_t global_ = 0;
  std::map<std::string, consumer> consumers_;
  std::string next_turn_;  // where rebalance starts, so freed credit goes round
};

}  // namespace warren
