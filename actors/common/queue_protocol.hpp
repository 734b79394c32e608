// The queue actor's interface, declared once as CAF typed_actor signatures (queue_actor.hpp
// describes each message). Senders cast the caf::actor they hold with queue_handle() so that a
// message the queue does not take, or a reply of the wrong type, fails to compile.
#pragma once

#include "actors/common/protocol.hpp"

#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

/// What connections send to a queue of either kind (the classic queue and the stream answer them
/// through one table: consumer_behavior in actors/queue/queue_core.hpp).
using queue_consumer_api =
    caf::typed_actor<caf::reacts_to<consume_atom, consumer_spec>,
                     caf::reacts_to<cancel_atom, caf::actor, uint16_t, std::string, bool>,
                     caf::reacts_to<credit_atom, caf::actor, uint16_t, std::string, uint32_t>,
                     caf::reacts_to<settle_atom, caf::actor, std::vector<uint64_t>, settle_kind>,
                     caf::reacts_to<close_atom, caf::actor, uint16_t>,
                     caf::replies_to<get_atom, caf::actor, uint16_t, bool>::with<get_reply>>;

/// Publishes, and what the vhost and the queue itself send.
using queue_control_api = caf::typed_actor<
    // from exchanges (and the vhost, for dead letters)
    caf::reacts_to<enqueue_atom, publish_batch>,
    // from the vhost
    caf::replies_to<purge_atom>::with<uint32_t>,
    caf::replies_to<delete_atom, bool, bool, bool>::with<uint32_t>,  // if_unused, if_empty, force
    caf::replies_to<declare_atom>::with<queue_info>, caf::replies_to<stats_atom>::with<queue_info>,
    caf::replies_to<consumers_atom>::with<std::vector<consumer_info>>,
    caf::replies_to<lookup_atom, message_id>::with<lookup_reply>,
    // ready messages from position `from` in delivery order, at most `count`, left in place
    caf::replies_to<peek_atom, uint64_t, uint32_t>::with<std::vector<queued_delivery>>,
    // to itself: expiry, group commit, compaction
    caf::reacts_to<tick_atom>, caf::reacts_to<sync_atom>, caf::reacts_to<compact_atom>>;

/// A queue's whole interface, classic queue or stream.
using queue_actor_type = queue_consumer_api::extend_with<queue_control_api>;

/// The typed view of a queue actor held as caf::actor (in routing tables, consumer records).
inline queue_actor_type queue_handle(const caf::actor& queue) {
  return caf::actor_cast<queue_actor_type>(queue);
}

}  // namespace warren
