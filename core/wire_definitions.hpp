// Definitions (a node's users, vhosts, permissions and durable topology) between Cap'n Proto and
// the model. Shared by the node's front door and the client library.
#pragma once

#include "broker.capnp.h"
#include "core/declarations.hpp"

namespace warren::wire {

/// Throws std::invalid_argument naming an exchange of an unknown type.
definitions read_definitions(rpc::Definitions::Reader in);
void write_definitions(const definitions& in, rpc::Definitions::Builder out);

}  // namespace warren::wire
