// refusing_queue: stands in, in a vhost's routes, for queues whose node is down. It takes what
// exchanges route to it and refuses it: confirmed publishes are nacked, so a publisher never
// believes a message is stored on a node that is not there. It holds nothing.
//   (enqueue_atom, publish_batch)  -> the origin gets (confirm_atom, channel, {}, nacked seqs)
#pragma once

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>

namespace warren {

caf::behavior refusing_queue(caf::event_based_actor* self);

}  // namespace warren
