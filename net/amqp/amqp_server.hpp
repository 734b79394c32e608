// amqp_server: the AMQP 0-9-1 front door. Listens on a TCP address and serves every accepted
// connection with an amqp_session, on its own listener_thread and kj event loop (the Cap'n
// Proto front door has its own), so a busy AMQP client never delays Cap'n Proto ones.
//
// start() returns the bound port once the socket listens, or throws std::runtime_error naming the
// address. stop() (any thread) drops every connection, whose connection actors then requeue
// what their clients held, and joins the thread.
#pragma once

#include "net/listener_thread.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace warren::amqp {

class amqp_server {
 public:
  /// `alarm` (a resource_alarm, may be null) tells when publishers must be held back. `name`
  /// names the listener in logs ("AMQP", "AMQPS").
  amqp_server(caf::actor_system& system, caf::actor node, caf::actor alarm,
              std::string name = "AMQP");
  ~amqp_server();

  amqp_server(const amqp_server&) = delete;
  amqp_server& operator=(const amqp_server&) = delete;

  uint16_t start(const std::string& bind_address, uint16_t port, uint16_t heartbeat_seconds,
                 const net::door_limits& limits,
                 std::optional<net::listener_tls> tls = std::nullopt);
  void stop();

 private:
  caf::actor_system& system_;
  caf::actor node_;
  caf::actor alarm_;
  net::listener_thread listener_;
};

}  // namespace warren::amqp
