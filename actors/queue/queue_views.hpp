// Read-only views of a classic queue's state, answered by the queue actor (queue_views.cpp).
#pragma once

#include "actors/queue/queue_actor.hpp"

#include <cstdint>
#include <vector>

namespace warren::queue_views {

/// The queue's listing row: its figures, ready messages counted with those paged out.
queue_info info_of(const queue_state& st);
/// One row per consumer.
std::vector<consumer_info> consumers_of(const queue_state& st);
/// Where the message with `id` is: ready (in memory or paged out) or unacked.
lookup_reply lookup(queue_state& st, const message_id& id);
/// Up to `count` ready messages from position `from` in delivery order, left where they are.
std::vector<queued_delivery> peek(queue_state& st, uint64_t from, uint32_t count);

}  // namespace warren::queue_views
