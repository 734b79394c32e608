// rpc_server: the Cap'n Proto front door. Listens on a TCP address (its own listener_thread and
// kj event loop) and serves the `Broker` bootstrap capability to every client. Broker's login
// (connect, or restore by a grant's token) is here; what it hands out is in rpc_connection,
// rpc_channel and rpc_grants.
//
// start() returns once the socket listens (with the port, useful when 0 was asked for) or throws
// std::runtime_error naming the address that could not be used. stop() may be called from any
// thread (a signal-waiting main thread, typically); it drops every client connection, whose
// connection actors then requeue what those clients held, and joins the thread.
#pragma once

#include "net/listener_thread.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace warren::net {

class rpc_server {
 public:
  /// `name` names the listener in logs ("RPC", "RPC TLS").
  rpc_server(caf::actor_system& system, caf::actor node, std::string name = "RPC");
  ~rpc_server();

  rpc_server(const rpc_server&) = delete;
  rpc_server& operator=(const rpc_server&) = delete;

  uint16_t start(const std::string& bind_address, uint16_t port, const door_limits& limits,
                 std::optional<listener_tls> tls = std::nullopt);
  void stop();

 private:
  caf::actor_system& system_;
  caf::actor node_;
  listener_thread listener_;
};

}  // namespace warren::net
