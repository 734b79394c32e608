// Exchange actor: owns one exchange's bindings and routes publish batches to queue actors.
//
// Messages (declared as code in exchange_protocol.hpp):
//   (bind_atom, target id, target actor, key, args) -> bool    added (false: already bound)
//   (unbind_atom, target id, key, args)             -> bool    removed (false: was not bound)
//   (unbind_q_atom, target id)                      -> void    the queue or exchange is gone
//   (publish_atom, publish_batch)                   -> std::vector<uint32_t>
//       routes each message; the reply holds, per message, how many queues it was sent to.
//       Each queue receives one (enqueue_atom, publish_batch) with its share of the batch and
//       confirms straight to the batch's origin.
//   (route_atom, messages, path)                    -> route_sets
//       from another exchange bound to this one (or using it as its alternate exchange): which
//       queues each message reaches from here, sending nothing.
// A target is a queue, or another exchange (an exchange-to-exchange binding) when its id has
// exchange_id_bit set. The vhost is the only writer of bindings; the exchange trusts them.
//
// Exchange bindings and the alternate exchange (argument "alternate-exchange", a name looked
// up when first needed) are followed as RabbitMQ does: a message reaches each queue once however
// many paths lead there, an exchange already on the path is not entered again (cycles end), and
// an exchange that routes a message nowhere hands it to its alternate exchange. Routing through
// other exchanges is asynchronous; batches still reach their queues in the order they came.
#pragma once

#include "actors/common/exchange_protocol.hpp"
#include "actors/common/queue_protocol.hpp"
#include "actors/routing/routing_table.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>

namespace warren {

constexpr uint64_t exchange_id_bit = uint64_t{1} << 63;

inline bool is_exchange_id(uint64_t id) {
  return (id & exchange_id_bit) != 0;
}

struct exchange_state {
  // A publish batch routed through other exchanges, waiting for their answers.
  struct in_flight {
    publish_batch batch;
    caf::typed_response_promise<std::vector<uint32_t>> rp;
    bool done = false;
    route_sets sets;
  };

  exchange_spec spec;
  caf::actor vhost;
  routing_table table{exchange_type::direct};
  std::unordered_map<routing_table::queue_id, caf::actor> targets;
  size_t exchange_targets = 0;  // targets that are exchanges
  std::optional<std::string> alternate;
  caf::actor alternate_actor;  // found by name when first needed
  std::deque<std::shared_ptr<in_flight>> in_order;
  static inline const char* name = "exchange";
};

/// The "alternate-exchange" argument of `spec`, if set to a name.
std::optional<std::string> alternate_exchange_of(const exchange_spec& spec);

exchange_actor_type::behavior_type exchange_actor(
    exchange_actor_type::stateful_pointer<exchange_state> self, exchange_spec spec,
    caf::actor vhost);

}  // namespace warren
