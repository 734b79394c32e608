// The capabilities behind connection and channel objects (private to the client). They are
// created, used and released on the kj thread only; the user-facing objects share them with
// the work they post there. Only channel::state::acks is touched from other threads.
#pragma once

#include "broker.capnp.h"
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <kj/memory.h>

#include <mutex>
#include <vector>

namespace warren::client {

struct connection::state {
  kj::Own<rpc::Connection::Client> cap;
};

struct channel::state {
  kj::Own<rpc::Channel::Client> cap;
  // Single acks made on any thread wait here until the kj thread sends them, all that gathered
  // meanwhile in one ackEach call: a consumer acking each message costs one call per burst.
  std::mutex acks_mutex;
  std::vector<uint64_t> acks;
};

}  // namespace warren::client
