// The capabilities behind connection and channel objects (private to the client). They are
// created, used and released on the kj thread only; the user-facing objects share them with
// the work they post there. Only channel::state::acks is touched from other threads.
#pragma once

#include "broker.capnp.h"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <kj/memory.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  // Whether each consumer's callbacks may still run (by tag; touched on the kj thread), and the
  // channel's own (cleared by close() and the destructor, on any thread): a callback checks
  // both on the worker just before it runs.
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> consumers;
  std::shared_ptr<std::atomic<bool>> open = std::make_shared<std::atomic<bool>>(true);
  // A settle the broker refused, thrown by the next call that waits (kj thread only).
  std::optional<error> settle_failure;
};

}  // namespace warren::client
