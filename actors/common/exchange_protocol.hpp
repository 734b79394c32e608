// The exchange actor's interface, declared once as CAF typed_actor signatures (exchange_actor.hpp
// describes each message). Senders holding an exchange as caf::actor go through
// exchange_handle() so that a wrong message or reply type fails to compile.
#pragma once

#include "actors/common/protocol.hpp"

#include <caf/actor_addr.hpp>
#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

/// A queue a message reaches.
struct route_target {
  uint64_t id = 0;
  caf::actor queue;
};

/// Per message of a batch: the queues it reaches.
using route_sets = std::vector<std::vector<route_target>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, route_target& x) {
  return f(x.id, x.queue);
}

using exchange_actor_type = caf::typed_actor<
    // from the vhost, the only writer of bindings
    caf::replies_to<bind_atom, uint64_t, caf::actor, std::string, field_table>::with<bool>,
    caf::replies_to<unbind_atom, uint64_t, std::string, field_table>::with<bool>,
    caf::reacts_to<unbind_q_atom, uint64_t>,
    // from connections (and the vhost, for dead letters)
    caf::replies_to<publish_atom, publish_batch>::with<std::vector<uint32_t>>,
    // from other exchanges: where messages go from here, sending nothing
    caf::replies_to<route_atom, std::vector<message_ptr>,
                    std::vector<caf::actor_addr>>::with<route_sets>>;

/// The typed view of an exchange actor held as caf::actor.
inline exchange_actor_type exchange_handle(const caf::actor& exchange) {
  return caf::actor_cast<exchange_actor_type>(exchange);
}

}  // namespace warren
