// Exchange actor: owns one exchange's bindings and routes publish batches to queue actors.
//
// Messages:
//   (bind_atom, queue_id, queue actor, key, args) -> bool      added (false: already bound)
//   (unbind_atom, queue_id, key, args)            -> bool      removed (false: was not bound)
//   (unbind_q_atom, queue_id)                     -> void      the queue is gone
//   (publish_atom, publish_batch)                 -> std::vector<uint32_t>
//       routes each message; the reply holds, per message, how many queues it was sent to.
//       Each queue receives one (enqueue_atom, publish_batch) with its share of the batch and
//       confirms straight to the batch's origin.
// The vhost is the only writer of bindings; the exchange trusts what it is given.
#pragma once

#include "actors/protocol.hpp"
#include "actors/routing_table.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <unordered_map>

namespace warren {

struct exchange_state {
  exchange_spec spec;
  routing_table table{exchange_type::direct};
  std::unordered_map<routing_table::queue_id, caf::actor> queues;
  static inline const char* name = "exchange";
};

caf::behavior exchange_actor(caf::stateful_actor<exchange_state>* self, exchange_spec spec);

}  // namespace warren
