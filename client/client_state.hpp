// The capabilities behind connection and channel objects (private to the client). They are
// created, used and released on the kj thread only; the user-facing objects share them with
// the work they post there.
#pragma once

#include "broker.capnp.h"
#include "client/channel.hpp"
#include "client/connection.hpp"

#include <kj/memory.h>

namespace warren::client {

struct connection::state {
  kj::Own<rpc::Connection::Client> cap;
};

struct channel::state {
  kj::Own<rpc::Channel::Client> cap;
};

}  // namespace warren::client
