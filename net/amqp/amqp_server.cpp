#include "net/amqp/amqp_server.hpp"

#include "actors/node/resource_alarm.hpp"

#include "actors/common/protocol.hpp"
#include "net/amqp/amqp_session.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace warren::amqp {

amqp_server::amqp_server(caf::actor_system& system, caf::actor node, caf::actor alarm,
                         std::string name)
    : system_(system),
      node_(std::move(node)),
      alarm_(std::move(alarm)),
      listener_(std::move(name)) {}

amqp_server::~amqp_server() {
  stop();
}

uint16_t amqp_server::start(const std::string& bind_address, uint16_t port,
                            uint16_t heartbeat_seconds, const net::door_limits& limits,
                            std::optional<net::listener_tls> tls) {
  return listener_.start(
      bind_address, port,
      [this, heartbeat_seconds, limits](const net::loop_context& loop) {
        auto config = std::make_shared<session_config>();
        config->system = &system_;
        config->node = node_;
        config->bridge = loop.bridge;
        config->timer = &loop.timer;
        config->heartbeat_seconds = heartbeat_seconds;
        config->limits = limits;
        config->channel_max = limits.channel_max;
        config->flow = std::make_shared<flow_control>();
        // The resource alarm's verdicts reach this loop through a small relay actor, which
        // goes when the serve function (holding `relay`) does.
        auto relay_actor = system_.spawn(
            [bridge = loop.bridge, flow = config->flow](caf::event_based_actor*) -> caf::behavior {
              return {[=](blocked_atom, bool blocked, std::string& reason) {
                bridge->post([flow, blocked, reason]() { flow->set(blocked, reason); });
              }};
            });
        std::shared_ptr<void> relay(nullptr, [relay_actor](void*) {
          caf::anon_send_exit(relay_actor, caf::exit_reason::user_shutdown);
        });
        if (alarm_)
          caf::anon_send(caf::actor_cast<resource_alarm_type>(alarm_), subscribe_atom::value,
                         relay_actor);
        return [config, relay](kj::Own<kj::AsyncIoStream> stream, const net::peer_address& peer) {
          return serve(kj::mv(stream), peer.name, peer.loopback, *config);
        };
      },
      std::move(tls));
}

void amqp_server::stop() {
  listener_.stop();
}

}  // namespace warren::amqp
