// management_server: the management door. An HTTP listener (kj's HTTP library, on its own
// listener_thread and kj loop) that serves:
//   /api/...   RabbitMQ's management API subset (api_routes.hpp), behind HTTP basic auth against
//              the node's users; a user needs a management, policymaker, monitoring or
//              administrator tag, as with RabbitMQ
//   /metrics   Prometheus' text format (metrics.hpp): behind the API's login here, and without
//              one on the metrics port (start_metrics), as RabbitMQ's plugin serves it
//   /          the web page and its scripts, built into the binary (web_assets.hpp)
//
// Nothing here runs unless someone asks: no timer polls the node, so a node nobody watches pays
// nothing for an open port.
#pragma once

#include "net/listener_thread.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace warren::net::http {

class management_server {
 public:
  /// `alarm`: the resource alarm, watched for /metrics; `node_name` names the node in listings.
  management_server(caf::actor_system& system, caf::actor node, caf::actor alarm,
                    std::string node_name);
  ~management_server();

  management_server(const management_server&) = delete;
  management_server& operator=(const management_server&) = delete;

  /// Returns the port (useful when 0 was asked for); throws std::runtime_error naming the
  /// address that could not be used.
  /// API requests log in from their headers before any body is read; a body may be as large as
  /// its route allows (1 MiB; a definitions import 64 MiB; a publish the largest message in
  /// base64) and must arrive within `limits.handshake_timeout_ms`: 413 and 408 otherwise.
  uint16_t start(const std::string& bind_address, uint16_t port, const door_limits& limits);
  /// The Prometheus door: /metrics in RabbitMQ's format, without a login, on a port of its own
  /// (RabbitMQ's is 15692); anything else there is 404. The management port also serves
  /// /metrics, to users who log in as for the API.
  uint16_t start_metrics(const std::string& bind_address, uint16_t port);
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace warren::net::http
