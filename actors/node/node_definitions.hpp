// node_definitions: the node's side of definitions export and import (RabbitMQ's definitions
// file). The node actor checks that the asker is an administrator, applies users, vhosts and
// permissions itself, and leaves what is below to these functions.
#pragma once

#include "actors/node/node_actor.hpp"

#include <functional>

namespace warren {

/// Collects the node's definitions: its users (with hashes), vhosts with limits and permissions,
/// and from every vhost actor the durable exchanges (not the built-in ones), the durable
/// non-exclusive queues and the bindings between what is exported (built-in sources included).
void collect_definitions(node_self self, std::function<void(definitions)> done);

/// What is wrong with `defs` against the node as it is, or empty: bad names, hashes, patterns
/// or tags, exclusive queues, and references to users or vhosts that neither exist nor are
/// defined alongside.
std::string check_definitions(const node_state& st, const definitions& defs);

/// Declares `defs`' exchanges, then queues, then bindings in their vhost actors (which exist by
/// now), all sent at once (a vhost takes them in that order); `done` gets the first failure in
/// that order, or no error.
void declare_topology(node_self self, const definitions& defs,
                      std::function<void(caf::error)> done);

}  // namespace warren
