// rpc_channel: the `Channel` capability (broker.capnp, Channel), one AMQP channel of a
// client's session: declaring, binding, publishing, consuming, settling and reading streams,
// each call a request to the session's connection actor.
//
// The capability closes its channel when the client drops it without calling close. Its own
// file because it carries the client's message traffic, which the connection's administration
// (rpc_connection.hpp) does not.
#pragma once

#include "net/capnp/rpc_session.hpp"

#include <cstdint>
#include <memory>

namespace warren::net {

/// The capability of channel `id` of `session`, which the connection actor has opened.
rpc::Channel::Client channel_capability(std::shared_ptr<rpc_session> session, uint16_t id);

}  // namespace warren::net
