// publish_confirms: a channel's publish calls waiting for their outcomes. Pure bookkeeping, no
// actors: the connection actor feeds it what exchanges and queues report and sends the answers
// it hands back.
//
// A publish call carries one or more messages and is answered once, when every message has an
// outcome. Each message gets the channel's next sequence number. The exchange reports how many
// queues a message reached; each of those queues then confirms (acks) or refuses (nacks) it.
// Outcome: no queue -> returned (mandatory) or dropped; any refusal -> rejected; else routed.
#pragma once

#include "core/outcomes.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace warren {

class publish_confirms {
 public:
  /// A call whose messages all have an outcome, in the order of its messages.
  struct answer {
    uint64_t request;
    std::vector<publish_outcome> outcomes;
    int64_t started_ns;  // steady clock, when the call started
  };

  class call;
  using call_ref = std::shared_ptr<call>;

  /// Starts a call of `count` messages (count > 0), answered as `request`.
  call_ref start(uint64_t request, size_t count);

  /// Message `index` of `c` gets the next sequence number, which is returned.
  uint64_t add(const call_ref& c, size_t index, bool mandatory);

  /// The exchange routed `seq` to `queues` queues (0: nobody took it).
  void routed(uint64_t seq, uint32_t queues);
  /// Routing failed (the exchange went away): the message counts as refused.
  void route_failed(uint64_t seq);
  /// One of the queues `seq` went to has it (on disk, for persistent messages) / refused it.
  /// Unknown numbers (a call already answered or abandoned) are ignored.
  void acked(uint64_t seq);
  void nacked(uint64_t seq);

  /// The calls answered since the last take, in the order they completed.
  std::vector<answer> take_answers();

  /// Every message still waiting counts as refused (a cluster member went down: a queue there may
  /// never answer, and a confirm must never claim what it may not have). Later reports for them
  /// are ignored.
  void refuse_waiting();

  /// Forgets every waiting call and returns their requests (each once), for a closing channel
  /// to fail them.
  std::vector<uint64_t> abandon();

  /// Messages still waiting for an outcome.
  size_t waiting() const { return pending_.size(); }

 private:
  struct pending {
    call_ref owner;
    size_t index;
    int64_t routed_to;  // -1 until the exchange answers
    uint32_t acked;
    uint32_t nacked;
    bool mandatory;
  };

  void finish_if_known(uint64_t seq);

  uint64_t next_seq_ = 0;
  std::unordered_map<uint64_t, pending> pending_;
  std::vector<answer> answers_;
};

class publish_confirms::call {
 public:
  call(uint64_t request, size_t count, int64_t started_ns)
      : request_(request), outcomes_(count), remaining_(count), started_ns_(started_ns) {}

 private:
  friend class publish_confirms;
  uint64_t request_;
  std::vector<publish_outcome> outcomes_;
  size_t remaining_;
  int64_t started_ns_;
};

}  // namespace warren
