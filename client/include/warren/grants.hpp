// Capability grants from the client's side (broker.capnp, CAPABILITY GRANTS).
//
// A connection makes a grant (connection::grant_publisher / grant_consumer) and gets its token,
// 64 hex digits; whoever holds the token opens it with restore_grant(), with no user name or
// password, and gets a channel that can do what the grant allows and nothing else.
#pragma once

#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <memory>
#include <string>

namespace warren::client {

/// Opens the grant of `token` on the node that `options` names (host, port and TLS; its vhost,
/// user and password are not used). The channel is its own connection to the node, in the
/// grant's vhost; destroying it closes that connection.
/// - A publisher grant's channel publishes, always with confirms, to the granted exchange (an
///   empty exchange name means it) with routing keys the grant's pattern matches.
/// - A consumer grant's channel consumes (not exclusively), gets and settles the granted queue.
/// Everything else fails with ACCESS_REFUSED naming the grant. A token that no live grant has
/// fails here with ACCESS_REFUSED; a grant revoked or expired later closes the channel
/// (CONNECTION_FORCED, and its consumers' on_cancel gets the reason).
std::unique_ptr<channel> restore_grant(const connect_options& options, const std::string& token);

}  // namespace warren::client
