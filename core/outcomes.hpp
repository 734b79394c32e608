// Outcomes every layer names the same way: what became of a published message, and how a
// delivery is settled. One definition each, carried between actors and front doors as these
// enums (their numbering is PublishResult.Outcome's in broker.capnp).
#pragma once

#include <cstdint>
#include <string>

namespace warren {

/// What became of one published message.
enum class publish_outcome : uint8_t {
  routed,    // taken by at least one queue (on disk, for persistent messages in durable queues)
  returned,  // mandatory and unroutable: returned to the publisher
  dropped,   // unroutable and not mandatory
  rejected,  // a queue refused it (overflow reject-publish, disk trouble): nacked
};

/// How a connection settles deliveries it holds.
enum class settle_kind : uint8_t { ack, requeue, reject };

std::string to_string(publish_outcome o);
std::string to_string(settle_kind k);

}  // namespace warren
