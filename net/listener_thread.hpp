// listener_thread: a TCP listener with its own kj event loop on its own thread, shared by the
// front doors (Cap'n Proto and AMQP). It accepts connections, sets TCP_NODELAY, and hands each
// stream with its peer address (after a TLS handshake, on a TLS listener) to the front door's
// serve function, keeping it until the promise
// that function returns settles.
//
// start() returns once the socket listens (with the port, useful when 0 was asked for) or throws
// std::runtime_error naming the address. stop() may be called from any thread; it drops every
// connection, then the serve function, and joins the thread.
#pragma once

#include "actors/storage/memory_ledger.hpp"
#include "transport/loop_bridge.hpp"
#include "transport/tls_context.hpp"

#include <kj/async-io.h>
#include <kj/timer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace warren::net {

// The front doors use the transport layer's loop glue throughout.
using transport::loop_bridge;
using transport::tls_context;
using transport::tls_files;

/// What both front doors enforce on every connection.
struct door_limits {
  /// A connection that has not logged in (and, on AMQP, opened its vhost) by then is closed.
  int64_t handshake_timeout_ms = 10000;  // RabbitMQ's default
  /// Largest message body: AMQP refuses it at its content header; the Cap'n Proto door reads
  /// messages up to twice this size so that it can refuse them with a clear error.
  uint64_t max_message_bytes = uint64_t{128} << 20;
  /// AMQP offers it in connection.tune; the Cap'n Proto door counts open channels.
  uint16_t channel_max = 2047;
  /// The node's count of memory held for messages: what a door holds (AMQP transactions not
  /// yet committed) is counted there too, so that the memory alarm sees it. May be null.
  std::shared_ptr<memory_ledger> ledger;
};

struct peer_address {
  std::string name = "unknown";  // "host:port"
  bool loopback = false;
};

/// The loop's facilities, for the front door's set-up (on the loop thread).
struct loop_context {
  std::shared_ptr<loop_bridge> bridge;  // other threads post work onto this loop
  kj::Timer& timer;
};

using serve_function =
    std::function<kj::Promise<void>(kj::Own<kj::AsyncIoStream>, const peer_address&)>;
/// Runs on the loop thread before the first accept; what it returns serves every connection.
using setup_function = std::function<serve_function(const loop_context&)>;

/// TLS on a listener: each accepted connection completes a TLS handshake, within the timeout,
/// before the front door sees it (the door's own handshake timeout starts after).
struct listener_tls {
  tls_files files;
  int64_t handshake_timeout_ms = 10000;
};

class listener_thread {
 public:
  /// `what` names the listener in errors and logs ("RPC", "AMQP").
  explicit listener_thread(std::string what);
  ~listener_thread();

  listener_thread(const listener_thread&) = delete;
  listener_thread& operator=(const listener_thread&) = delete;

  /// With `tls`, a bad certificate or key file makes start() throw, naming the file.
  uint16_t start(const std::string& bind_address, uint16_t port, setup_function setup,
                 std::optional<listener_tls> tls = std::nullopt);
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace warren::net
