// rpc_grants: the capabilities of capability grants (broker.capnp, CAPABILITY GRANTS). Each is
// its own session, logged in by the grant's token, with one channel: a `Publisher` (in confirm
// mode) checks every message's exchange and routing key against the grant before publishing;
// a `QueueConsumer` works on the granted queue only. The session's permissions are the grant's
// too, so the connection actor refuses anything else even if a check here were missed.
#pragma once

#include "net/capnp/rpc_session.hpp"

#include <kj/async.h>

#include <memory>
#include <string>

namespace warren::net {

/// A grant's capability, of its kind.
struct opened_grant {
  grant_kind kind = grant_kind::publisher;
  rpc::Publisher::Client publisher = nullptr;
  rpc::QueueConsumer::Client consumer = nullptr;
};

/// Logs `session` (made by rpc_session::open_by_token) in, opens its channel and makes the
/// capability of its grant. Rejects with the broker's error (ACCESS_REFUSED for a token no live
/// grant has).
kj::Promise<opened_grant> open_grant(std::shared_ptr<rpc_session> session, std::string token);

}  // namespace warren::net
