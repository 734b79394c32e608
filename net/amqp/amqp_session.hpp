// amqp_session: one AMQP 0-9-1 client connection, on the AMQP listener's kj thread.
//
// It reads frames from the socket, runs the connection handshake (PLAIN and AMQPLAIN, tune,
// heartbeats), and turns channel methods into requests to a connection actor, the same actor
// the Cap'n Proto front door uses: a front door, not a second broker. The actor answers through
// amqp_link (a client_link posting onto the loop); the session writes the -ok methods,
// deliveries, returns, confirms and closes.
//
// Throughput: all publishes of one socket read go to the actor as one batch per channel, single
// acks of one read as one ackEach, and everything written in one loop turn as one write. A
// publisher is held back by not reading its socket while too many of its messages are still
// unanswered (the broker's credit), so no mailbox grows without bound.
#pragma once

#include "net/listener_thread.hpp"
#include "transport/loop_bridge.hpp"

#include <kj/async-io.h>
#include <kj/timer.h>
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <memory>
#include <string>
#include <vector>

namespace warren::amqp {

/// Something that reacts when the node starts or stops holding back publishers (kj thread).
class flow_listener {
 public:
  // noexcept(false) like the kj objects its implementations hold.
  virtual ~flow_listener() noexcept(false) = default;
  virtual void flow_changed() = 0;
};

/// The node's resource alarm as the AMQP listener's loop sees it (kj thread only).
class flow_control {
 public:
  bool blocked() const { return blocked_; }
  const std::string& reason() const { return reason_; }
  void set(bool blocked, std::string reason);
  /// Also forgets listeners that are gone, once their number has doubled since the last time:
  /// connections come and go without the alarm ever changing.
  void listen(std::weak_ptr<flow_listener> listener);

 private:
  size_t prune_at_ = 64;
  bool blocked_ = false;
  std::string reason_;
  std::vector<std::weak_ptr<flow_listener>> listeners_;
};

struct session_config {
  caf::actor_system* system = nullptr;
  caf::actor node;
  std::shared_ptr<transport::loop_bridge> bridge;
  kj::Timer* timer = nullptr;
  std::shared_ptr<flow_control> flow;
  uint16_t heartbeat_seconds = 60;  // offered in connection.tune; 0 = none
  uint32_t frame_max = 131072;
  uint16_t channel_max = 2047;
  net::door_limits limits;
};

/// Serves one accepted connection until it ends (either side closed it, or it broke). `peer` is
/// "host:port"; guest may only log in from a loopback peer.
kj::Promise<void> serve(kj::Own<kj::AsyncIoStream> stream, std::string peer, bool peer_is_loopback,
                        const session_config& config);

}  // namespace warren::amqp
