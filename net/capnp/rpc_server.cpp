#include "net/capnp/rpc_server.hpp"

#include "core/log.hpp"
#include "net/capnp/rpc_connection.hpp"
#include "net/capnp/rpc_grants.hpp"
#include "net/capnp/rpc_session.hpp"
#include "net/capnp/size_guarded_stream.hpp"
#include "net/capnp/wire_convert.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <caf/send.hpp>

namespace warren::net {

namespace {

/// Largest message the server reads from a client: bounds memory per call.
constexpr uint64_t max_message_words = 16 * 1024 * 1024;  // 128 MiB
// Before connect succeeds a client sends one small call; nothing bigger is read.
constexpr uint64_t max_message_before_login = 64 * 1024;

class broker_impl final : public rpc::Broker::Server {
 public:
  broker_impl(caf::actor_system& system, caf::actor node,
              std::shared_ptr<transport::loop_bridge> bridge, peer_address peer,
              std::shared_ptr<bool> logged_in)
      : system_(system),
        node_(std::move(node)),
        bridge_(std::move(bridge)),
        peer_(std::move(peer)),
        logged_in_(std::move(logged_in)) {}

 protected:
  kj::Promise<void> connect(ConnectContext ctx) override {
    auto p = ctx.getParams();
    client_hello hello{text(p.getVhost()),      text(p.getUser()), text(p.getPassword()),
                       text(p.getClientName()), peer_.name,        peer_.loopback};
    if (hello.client_name.empty()) hello.client_name = peer_.name;
    hello.bad_settle_closes_channel = false;
    auto session = rpc_session::create(system_, node_, bridge_, std::move(hello));
    return session->request([&](uint64_t r) { session->conn().open(r); })
        .then([ctx, session, logged_in = logged_in_](request_answer) mutable {
          *logged_in = true;
          ctx.getResults().setConnection(connection_capability(session));
        });
  }

  kj::Promise<void> restore(RestoreContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      auto out = ctx.getResults().initGranted();
      if (g.kind == grant_kind::publisher)
        out.setPublisher(kj::mv(g.publisher));
      else
        out.setConsumer(kj::mv(g.consumer));
    });
  }

  kj::Promise<void> restorePublisher(RestorePublisherContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      if (g.kind != grant_kind::publisher) refuse_kind("consumer", "restoreConsumer");
      ctx.getResults().setPublisher(kj::mv(g.publisher));
    });
  }

  kj::Promise<void> restoreConsumer(RestoreConsumerContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      if (g.kind != grant_kind::consumer) refuse_kind("publisher", "restorePublisher");
      ctx.getResults().setConsumer(kj::mv(g.consumer));
    });
  }

 private:
  // Logs in by a grant's token, as its own session, and opens the grant's capability.
  kj::Promise<opened_grant> open_token(capnp::Data::Reader raw) {
    std::string token(reinterpret_cast<const char*>(raw.begin()), raw.size());
    if (token.empty())
      throw_failure({reply_code::access_refused, "login refused: the grant token is empty"});
    client_hello hello;
    hello.client_name = peer_.name;
    hello.peer = peer_.name;
    hello.loopback = peer_.loopback;
    hello.bad_settle_closes_channel = false;
    hello.grant_token = token;
    auto session = rpc_session::create(system_, node_, bridge_, std::move(hello));
    return open_grant(session, std::move(token)).then([logged_in = logged_in_](opened_grant g) {
      *logged_in = true;
      return g;
    });
  }

  // The grant opened is dropped with the exception, which closes its session.
  [[noreturn]] static void refuse_kind(const char* kind, const char* method) {
    throw_failure({reply_code::precondition_failed,
                   std::string("this token is a ") + kind + " grant's; open it with " + method});
  }

  caf::actor_system& system_;
  caf::actor node_;
  std::shared_ptr<transport::loop_bridge> bridge_;
  peer_address peer_;
  std::shared_ptr<bool> logged_in_;  // set once connect or a restore succeeded
};

// One accepted TCP connection and the RPC system serving it.
struct served_client {
  served_client(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap,
                capnp::ReaderOptions options)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER, options),
        rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {}

  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

// Calls of one connection that have not returned, in words, past which the node stops reading
// it (broker.capnp, PAST THE RULE): a client cannot fill the node's memory by never waiting.
constexpr size_t call_flow_limit_words = 8 * 1024 * 1024;  // 64 MiB

}  // namespace

rpc_server::rpc_server(caf::actor_system& system, caf::actor node, std::string name)
    : system_(system), node_(std::move(node)), listener_(std::move(name)) {}

rpc_server::~rpc_server() {
  stop();
}

// Resolves (ending the connection) when the client has not logged in within the timeout.
kj::Promise<void> handshake_deadline(kj::Timer& timer, int64_t ms, std::shared_ptr<bool> logged_in,
                                     std::string peer) {
  if (ms <= 0) return kj::NEVER_DONE;
  return timer.afterDelay(ms * kj::MILLISECONDS)
      .then([logged_in, ms, peer = std::move(peer)]() -> kj::Promise<void> {
        if (*logged_in) return kj::NEVER_DONE;
        log(log_level::info, "rpc",
            "dropping " + peer + ": no connect within " + std::to_string(ms) + " ms");
        return kj::READY_NOW;
      });
}

uint16_t rpc_server::start(const std::string& bind_address, uint16_t port,
                           const door_limits& limits, std::optional<listener_tls> tls) {
  return listener_.start(
      bind_address, port,
      [this, limits](const loop_context& loop) -> serve_function {
        auto bridge = loop.bridge;
        auto* timer = &loop.timer;
        return [this, bridge, limits, timer](kj::Own<kj::AsyncIoStream> stream,
                                             const peer_address& peer) {
          capnp::ReaderOptions options;
          options.traversalLimitInWords =
              std::max<uint64_t>(max_message_words, limits.max_message_bytes / 4 + (1 << 20));
          auto logged_in = std::make_shared<bool>(false);
          auto guarded = kj::heap<size_guarded_stream>(kj::mv(stream), max_message_before_login,
                                                       logged_in, peer.name);
          auto client = kj::heap<served_client>(
              kj::mv(guarded), kj::heap<broker_impl>(system_, node_, bridge, peer, logged_in),
              options);
          // One call larger than the limit is still read: the limit only stops the next.
          client->rpc.setFlowLimit(call_flow_limit_words);
          auto& network = client->network;
          return network.onDisconnect()
              .exclusiveJoin(
                  handshake_deadline(*timer, limits.handshake_timeout_ms, logged_in, peer.name))
              .attach(kj::mv(client));
        };
      },
      std::move(tls));
}

void rpc_server::stop() {
  listener_.stop();
}

}  // namespace warren::net
