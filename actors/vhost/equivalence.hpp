// Redeclaring an exchange or queue must ask for what exists (AMQP's "equivalent" declarations).
// Pure: the vhost actor refuses with PRECONDITION_FAILED and this text.
#pragma once

#include "core/declarations.hpp"

#include <string>

namespace warren {

/// RabbitMQ's complaint about the first property of `asked` that differs from `current`, e.g.
/// "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'true' but current is
/// 'false'" (arguments are compared as tables, naming the first key that differs); empty when
/// the declarations are equivalent.
std::string exchange_mismatch(const std::string& vhost, const exchange_spec& current,
                              const exchange_spec& asked);
std::string queue_mismatch(const std::string& vhost, const queue_spec& current,
                           const queue_spec& asked);

}  // namespace warren
