#include "net/amqp/amqp_server.hpp"

#include "actors/log.hpp"
#include "actors/protocol.hpp"
#include "net/amqp/amqp_session.hpp"
#include "net/loop_bridge.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <kj/async-io.h>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <future>
#include <mutex>
#include <thread>

namespace warren::amqp {

namespace {

struct peer_address {
  std::string name = "unknown";
  bool loopback = false;
};

peer_address peer_of(kj::AsyncIoStream& stream) {
  sockaddr_storage addr{};
  unsigned len = sizeof addr;
  try {
    stream.getpeername(reinterpret_cast<sockaddr*>(&addr), &len);
  } catch (...) {
    return {};
  }
  peer_address out;
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    out.loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  } else if (addr.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
    out.loopback = IN6_IS_ADDR_LOOPBACK(&in->sin6_addr) ||
                   (IN6_IS_ADDR_V4MAPPED(&in->sin6_addr) && in->sin6_addr.s6_addr[12] == 127);
  }
  out.name = std::string(host) + ":" + std::to_string(port);
  return out;
}

}  // namespace

struct amqp_server::impl : public kj::TaskSet::ErrorHandler {
  impl(caf::actor_system& system, caf::actor node, caf::actor alarm)
      : system(system), node(std::move(node)), alarm(std::move(alarm)) {}

  caf::actor_system& system;
  caf::actor node;
  caf::actor alarm;
  std::thread thread;
  std::mutex mutex;
  kj::CrossThreadPromiseFulfiller<void>* stop_signal = nullptr;  // owned by the kj thread
  bool stop_requested = false;

  void taskFailed(kj::Exception&& e) override {
    log(log_level::debug, "amqp", std::string("connection ended: ") + e.getDescription().cStr());
  }

  kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener, kj::TaskSet& connections,
                                const session_config& config) {
    return listener.accept().then(
        [this, &listener, &connections, &config](kj::Own<kj::AsyncIoStream> stream) {
          int one = 1;
          try {
            stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          } catch (...) {
          }
          auto peer = peer_of(*stream);
          connections.add(serve(kj::mv(stream), peer.name, peer.loopback, config));
          return accept_loop(listener, connections, config);
        });
  }

  void run(std::string bind, uint16_t port, uint16_t heartbeat, std::promise<uint16_t>& ready) {
    kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_owner;
    try {
      auto io = kj::setupAsyncIo();
      session_config config;
      config.system = &system;
      config.node = node;
      config.bridge = std::make_shared<net::loop_bridge>();
      config.timer = &io.provider->getTimer();
      config.heartbeat_seconds = heartbeat;
      config.flow = std::make_shared<flow_control>();
      kj::TaskSet background(*this);
      background.add(config.bridge->run());
      // The resource alarm's verdicts reach this loop through a small relay actor.
      auto relay = system.spawn(
          [bridge = config.bridge, flow = config.flow](caf::event_based_actor*) -> caf::behavior {
            return {[=](blocked_atom, bool blocked, std::string& reason) {
              bridge->post([flow, blocked, reason]() { flow->set(blocked, reason); });
            }};
          });
      if (alarm) caf::anon_send(alarm, subscribe_atom::value, relay);
      struct stop_relay {
        caf::actor relay;
        ~stop_relay() { caf::anon_send_exit(relay, caf::exit_reason::user_shutdown); }
      } relay_guard{relay};
      kj::Own<kj::ConnectionReceiver> listener;
      try {
        auto addr = io.provider->getNetwork().parseAddress(bind, port).wait(io.waitScope);
        listener = addr->listen();
      } catch (const kj::Exception& e) {
        throw std::runtime_error("cannot listen for AMQP on " + bind + ":" + std::to_string(port) +
                                 ": " + e.getDescription().cStr());
      }
      auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
      {
        std::lock_guard<std::mutex> guard(mutex);
        stop_owner = kj::mv(stop.fulfiller);
        stop_signal = stop_owner.get();
        if (stop_requested) stop_signal->fulfill();
      }
      ready.set_value(static_cast<uint16_t>(listener->getPort()));
      {
        kj::TaskSet connections(*this);
        background.add(accept_loop(*listener, connections, config));
        stop.promise.wait(io.waitScope);
        // Leaving this scope drops every connection: their actors requeue what clients held.
      }
      config.bridge->close();
      std::lock_guard<std::mutex> guard(mutex);
      stop_signal = nullptr;
    } catch (...) {
      {
        std::lock_guard<std::mutex> guard(mutex);
        stop_signal = nullptr;
      }
      try {
        ready.set_exception(std::current_exception());
      } catch (const std::future_error&) {
        log(log_level::error, "amqp", "the AMQP listener thread failed after start-up");
      }
    }
  }
};

amqp_server::amqp_server(caf::actor_system& system, caf::actor node, caf::actor alarm)
    : impl_(std::make_unique<impl>(system, std::move(node), std::move(alarm))) {}

amqp_server::~amqp_server() {
  stop();
}

uint16_t amqp_server::start(const std::string& bind_address, uint16_t port,
                            uint16_t heartbeat_seconds) {
  std::promise<uint16_t> ready;
  auto bound = ready.get_future();
  impl_->thread = std::thread([this, bind_address, port, heartbeat_seconds, &ready] {
    impl_->run(bind_address, port, heartbeat_seconds, ready);
  });
  try {
    return bound.get();
  } catch (...) {
    impl_->thread.join();
    throw;
  }
}

void amqp_server::stop() {
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    impl_->stop_requested = true;
    if (impl_->stop_signal != nullptr) impl_->stop_signal->fulfill();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace warren::amqp
