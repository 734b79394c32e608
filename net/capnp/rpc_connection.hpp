// rpc_connection: the `Connection` capability (broker.capnp, Connection) of a logged-in
// session: opening channels (rpc_channel.hpp), and the node's administration: vhosts and their
// limits, users, permissions, definitions, the listings, the cluster's nodes, statistics and
// capability grants (rpc_grants.hpp).
//
// Its own file because administration is most of the interface and none of the message
// traffic. The session lives as long as this capability or one of its channels.
#pragma once

#include "net/capnp/rpc_session.hpp"

#include <memory>

namespace warren::net {

/// The capability of `session`, whose connection actor has accepted the login (open).
rpc::Connection::Client connection_capability(std::shared_ptr<rpc_session> session);

}  // namespace warren::net
