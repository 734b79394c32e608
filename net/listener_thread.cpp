#include "net/listener_thread.hpp"

#include "core/log.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace warren::net {

namespace {

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

struct listener_thread::impl : public kj::TaskSet::ErrorHandler {
  explicit impl(std::string what) : what(std::move(what)) {}

  std::string what;
  std::optional<listener_tls> tls_settings;
  std::unique_ptr<tls_context> tls;  // made on the loop thread when tls_settings are given
  std::thread thread;
  std::mutex mutex;
  kj::CrossThreadPromiseFulfiller<void>* stop_signal = nullptr;  // owned by the loop thread
  bool stop_requested = false;

  void taskFailed(kj::Exception&& e) override {
    log(log_level::debug, "net", what + " connection ended: " + e.getDescription().cStr());
  }

  // Accepts until the listener stops. A failed accept (out of descriptors, most often) is
  // logged once per run of failures and retried after a short pause: the listener never gives up.
  kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener, kj::TaskSet& connections,
                                serve_function& serve, kj::Timer& timer) {
    // evalNow: accept() throws right away when the descriptors are still used up.
    return kj::evalNow([&] { return listener.accept(); })
        .then(
            [this, &listener, &connections, &serve, &timer](kj::Own<kj::AsyncIoStream> stream) {
              accepted_again();
              int one = 1;
              try {
                stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
              } catch (...) {
              }
              auto peer = peer_of(*stream);
              // A connection that cannot be served (its session failed to start) is dropped;
              // the loop goes on, since a throw here would end it and the door with it.
              KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                             connections.add(tls ? serve_after_tls(kj::mv(stream), peer, serve)
                                                 : serve(kj::mv(stream), peer));
                           })) {
                log(log_level::warn, "net",
                    what + " listener cannot serve the connection from " + peer.name + ": " +
                        e->getDescription().cStr());
              }
              return accept_loop(listener, connections, serve, timer);
            },
            [this, &listener, &connections, &serve, &timer](kj::Exception&& e) {
              accept_failed(e);
              return timer.afterDelay(accept_retry_ms * kj::MILLISECONDS)
                  .then([this, &listener, &connections, &serve, &timer] {
                    return accept_loop(listener, connections, serve, timer);
                  });
            });
  }

  kj::Promise<void> serve_after_tls(kj::Own<kj::AsyncIoStream> stream, const peer_address& peer,
                                    serve_function& serve) {
    return tls->get()
        .wrapServer(kj::mv(stream))
        .then([&serve,
               peer](kj::Own<kj::AsyncIoStream> secured) { return serve(kj::mv(secured), peer); },
              [this, peer](kj::Exception&& e) {
                log(log_level::info, "net",
                    "TLS handshake with " + peer.name + " (" + what +
                        " listener) failed: " + e.getDescription().cStr());
              });
  }

  static constexpr int64_t accept_retry_ms = 100;
  uint64_t failed_accepts = 0;

  void accept_failed(const kj::Exception& e) {
    if (failed_accepts++ > 0) return;
    std::string why = e.getDescription().cStr();
    bool out_of_fds = why.find("Too many open files") != std::string::npos;
    log(log_level::warn, "net",
        what + " listener cannot accept connections: " +
            (out_of_fds ? "out of file descriptors (raise the limit: ulimit -n)" : why) +
            "; retrying every " + std::to_string(accept_retry_ms) + " ms");
  }

  void accepted_again() {
    if (failed_accepts == 0) return;
    log(log_level::info, "net",
        what + " listener accepts again, after " + std::to_string(failed_accepts) +
            " failed attempt(s)");
    failed_accepts = 0;
  }

  void run(std::string bind, uint16_t port, setup_function setup, std::promise<uint16_t>& ready) {
    kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_owner;
    try {
      auto io = kj::setupAsyncIo();
      auto bridge = std::make_shared<loop_bridge>();
      kj::TaskSet background(*this);
      background.add(bridge->run());
      kj::Own<kj::ConnectionReceiver> listener;
      try {
        auto addr = io.provider->getNetwork().parseAddress(bind, port).wait(io.waitScope);
        listener = addr->listen();
      } catch (const kj::Exception& e) {
        throw std::runtime_error("cannot listen on " + bind + ":" + std::to_string(port) + " (" +
                                 what + "): " + e.getDescription().cStr());
      }
      auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
      {
        std::lock_guard<std::mutex> guard(mutex);
        stop_owner = kj::mv(stop.fulfiller);
        stop_signal = stop_owner.get();
        if (stop_requested) stop_signal->fulfill();
      }
      if (tls_settings)
        tls = tls_context::server(tls_settings->files, &io.provider->getTimer(),
                                  tls_settings->handshake_timeout_ms);
      {
        auto serve = setup(loop_context{bridge, io.provider->getTimer()});
        ready.set_value(static_cast<uint16_t>(listener->getPort()));
        kj::TaskSet connections(*this);
        background.add(accept_loop(*listener, connections, serve, io.provider->getTimer()));
        stop.promise.wait(io.waitScope);
        // Leaving this scope drops every connection (their actors requeue what clients held),
        // then the front door's serve function.
      }
      bridge->close();
      tls = nullptr;
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
        log(log_level::error, "net", "the " + what + " listener thread failed after start-up");
      }
    }
  }
};

listener_thread::listener_thread(std::string what)
    : impl_(std::make_unique<impl>(std::move(what))) {}

listener_thread::~listener_thread() {
  stop();
}

uint16_t listener_thread::start(const std::string& bind_address, uint16_t port,
                                setup_function setup, std::optional<listener_tls> tls) {
  impl_->tls_settings = std::move(tls);
  std::promise<uint16_t> ready;
  auto bound = ready.get_future();
  impl_->thread = std::thread([this, bind_address, port, setup = std::move(setup), &ready] {
    impl_->run(bind_address, port, setup, ready);
  });
  try {
    return bound.get();
  } catch (...) {
    impl_->thread.join();
    throw;
  }
}

void listener_thread::stop() {
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    impl_->stop_requested = true;
    if (impl_->stop_signal != nullptr) impl_->stop_signal->fulfill();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace warren::net
