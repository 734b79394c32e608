// Dead-lettering as RabbitMQ does it: the copy of a message that leaves a queue for its
// dead-letter exchange (x-dead-letter-exchange, x-dead-letter-routing-key) with the death headers
// (x-death, x-first-death-*), and the rule that breaks dead-letter cycles. Pure functions of the
// message and the queue's arguments, so every queue type dead-letters alike.
#pragma once

#include "actors/queue/queue_arguments.hpp"
#include "core/message.hpp"

#include <string>

namespace warren {

/// The copy of `m` that goes to `limits`' dead-letter exchange, dead-lettered from `queue` for
/// `reason` ("rejected", "expired", "maxlen"). `limits.dead_letter_exchange` must be set.
message_ptr dead_letter_copy(const std::string& queue, const queue_limits& limits, const message& m,
                             const char* reason);

/// RabbitMQ's cycle rule: a dead-lettered message that reaches a queue it already died in is
/// dropped, unless a rejection (a consumer's decision) happened on the way round.
bool dead_letter_cycle(const message& m, const std::string& queue);

}  // namespace warren
