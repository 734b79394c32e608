#include "net/capnp/rpc_session.hpp"

#include "actors/connection/connection_actor.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "net/capnp/wire_convert.hpp"
#include "transport/remote_error.hpp"

#include <caf/send.hpp>

namespace warren::net {

namespace {

/// Body bytes of one deliver call at most, unless a single message is bigger (it goes alone).
constexpr size_t max_deliver_bytes = 1 << 20;

// The connection actor's way back: every event becomes a function posted to the kj loop, where
// it finds the session if it still exists.
class rpc_link final : public client_link {
 public:
  rpc_link(std::shared_ptr<transport::loop_bridge> bridge, std::weak_ptr<rpc_session> session)
      : bridge_(std::move(bridge)), session_(std::move(session)) {}

  // Moved into the posted work, never copied (a publish call's outcomes, a listing, a batch).
  void reply(uint64_t request, caf::error error, request_answer answer) override {
    on_loop(
        [request, error = std::move(error), answer = std::move(answer)](rpc_session& s) mutable {
          s.complete(request, std::move(error), std::move(answer));
        });
  }
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) override {
    on_loop([channel, tag, batch = std::move(batch)](rpc_session& s) mutable {
      s.deliver(channel, tag, std::move(batch));
    });
  }
  void consumer_cancelled(uint16_t channel, const std::string& tag,
                          const std::string& reason) override {
    on_loop([=](rpc_session& s) { s.consumer_cancelled(channel, tag, reason); });
  }
  // Channel ids are never reused on this door, so the serial is not needed.
  void channel_closed(uint16_t channel, uint64_t, const broker_failure& reason) override {
    on_loop([=](rpc_session& s) { s.channel_closed(channel, reason); });
  }
  void connection_closed(const broker_failure& reason) override {
    on_loop([=](rpc_session& s) { s.actor_gone(reason); });
  }

 private:
  template <class F>
  void on_loop(F f) {
    bridge_->post([session = session_, f = std::move(f)]() mutable {
      if (auto s = session.lock()) f(*s);
    });
  }

  std::shared_ptr<transport::loop_bridge> bridge_;
  std::weak_ptr<rpc_session> session_;
};

}  // namespace

rpc_session::rpc_session(caf::actor_system& system, caf::actor node,
                         std::shared_ptr<transport::loop_bridge> bridge, const client_hello& hello)
    : system_(system),
      node_(std::move(node)),
      bridge_(std::move(bridge)),
      client_name_(hello.client_name),
      tasks_(*this) {
  origin_.client_name = hello.client_name;
  origin_.peer = hello.peer;
  origin_.loopback = hello.loopback;
  origin_.bad_settle_closes_channel = hello.bad_settle_closes_channel;
}

std::shared_ptr<rpc_session> rpc_session::open_by_token(std::string token) const {
  auto hello = origin_;
  hello.grant_token = std::move(token);
  return create(system_, node_, bridge_, std::move(hello));
}

std::shared_ptr<rpc_session> rpc_session::create(caf::actor_system& system, caf::actor node,
                                                 std::shared_ptr<transport::loop_bridge> bridge,
                                                 client_hello hello) {
  std::shared_ptr<rpc_session> session(new rpc_session(system, node, bridge, hello));
  auto link = std::make_shared<rpc_link>(bridge, session);
  auto actor = system.spawn(connection_actor, std::move(node), link, std::move(hello));
  session->conn_ = connection_ref(actor);
  // When the actor stops for any reason, calls still waiting on it must not hang.
  std::weak_ptr<rpc_session> weak = session;
  actor->attach_functor([bridge, weak]() {
    bridge->post([weak]() {
      if (auto s = weak.lock())
        s->actor_gone({reply_code::connection_forced, "the connection was closed by the broker"});
    });
  });
  return session;
}

rpc_session::~rpc_session() {
  conn_.close();
}

bool rpc_session::add_consumer(uint16_t channel, const std::string& tag,
                               rpc::Consumer::Client consumer, delivery_window window) {
  consumer_pipe pipe{kj::mv(consumer), window, 0, {}};
  return consumers_.emplace(consumer_key(channel, tag), kj::mv(pipe)).second;
}

void rpc_session::remove_consumer(uint16_t channel, const std::string& tag) {
  consumers_.erase({channel, tag});
}

void rpc_session::complete(uint64_t request, caf::error error, request_answer answer) {
  answers_.complete(request, std::move(error), std::move(answer));
}

void rpc_session::deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) {
  auto c = consumers_.find({channel, tag});
  if (c == consumers_.end()) return;  // cancelled meanwhile: unacked ones were requeued
  for (auto& d : batch) c->second.waiting.push_back(std::move(d));
  send_calls(c->first, c->second);
}

// Starts deliver calls while the consumer's window has room: each takes up to max_batch
// waiting deliveries and about max_deliver_bytes of bodies (a bigger message goes alone).
void rpc_session::send_calls(const consumer_key& key, consumer_pipe& pipe) {
  while (!pipe.waiting.empty() && pipe.calls_in_flight < pipe.window.max_calls) {
    size_t n = 0, bytes = 0;
    while (n < pipe.waiting.size() && n < pipe.window.max_batch &&
           (n == 0 || bytes + pipe.waiting[n].msg->body.size() <= max_deliver_bytes))
      bytes += pipe.waiting[n++].msg->body.size();
    auto req = pipe.cap.deliverRequest();
    auto list = req.initDeliveries(static_cast<unsigned>(n));
    for (unsigned i = 0; i < n; ++i) write_delivery(pipe.waiting[i], key.second, list[i]);
    pipe.waiting.erase(pipe.waiting.begin(), pipe.waiting.begin() + static_cast<ptrdiff_t>(n));
    ++pipe.calls_in_flight;
    auto count = static_cast<uint32_t>(n);
    tasks_.add(req.send().then([this, key, count](auto&&) { call_returned(key, count); },
                               [this, key](kj::Exception&& e) { call_failed(key, e); }));
  }
}

// A deliver call returned: consumers not limited by acks get that much credit back, and the
// next waiting deliveries go out.
void rpc_session::call_returned(const consumer_key& key, uint32_t deliveries) {
  conn_.flushed(key.first, key.second, deliveries);
  auto c = consumers_.find(key);
  if (c == consumers_.end()) return;
  --c->second.calls_in_flight;
  send_calls(c->first, c->second);
}

// A deliver call threw: the consumer is cancelled, its unacked deliveries go back to the queue
// as redelivered, and it learns why through `cancelled`. (A lost network connection closes
// the whole connection instead.)
void rpc_session::call_failed(const consumer_key& key, const kj::Exception& e) {
  auto c = consumers_.find(key);
  if (c == consumers_.end() || e.getType() == kj::Exception::Type::DISCONNECTED) return;
  auto reason = "deliver failed: " + transport::remote_description(e);
  log(log_level::warn, "rpc",
      "consumer " + quote(key.second) + " on channel " + std::to_string(key.first) + " of " +
          quote(client_name_) + " cancelled, its unacked messages requeued: " + reason);
  auto cap = kj::mv(c->second.cap);
  consumers_.erase(c);
  tasks_.add(
      request([&](uint64_t r) { conn_.cancel(r, key.first, key.second, true); }).ignoreResult());
  auto req = cap.cancelledRequest();
  req.setConsumerTag(key.second);
  req.setReason(reason);
  tasks_.add(req.send().ignoreResult());
}

void rpc_session::consumer_cancelled(uint16_t channel, const std::string& tag,
                                     const std::string& reason) {
  auto c = consumers_.find({channel, tag});
  if (c == consumers_.end()) return;
  auto req = c->second.cap.cancelledRequest();
  req.setConsumerTag(tag);
  req.setReason(reason);
  tasks_.add(req.send().ignoreResult());
  consumers_.erase(c);
}

// The broker closed the channel (a failed call, a consumer timeout): its consumers learn why
// through `cancelled`, as when their queue goes.
void rpc_session::channel_closed(uint16_t channel, const broker_failure& reason) {
  broker_closed_.insert(channel);
  std::vector<std::string> tags;
  for (const auto& [key, consumer] : consumers_)
    if (key.first == channel) tags.push_back(key.second);
  for (const auto& tag : tags)
    consumer_cancelled(channel, tag, "channel closed: " + to_string(reason));
}

void rpc_session::actor_gone(broker_failure reason) {
  if (gone_) return;
  gone_ = true;
  gone_reason_ = std::move(reason);
  answers_.reject_all(gone_reason_);
  // Consumers still registered learn why (a revoked grant: the broker said so before it
  // closed the channels).
  std::vector<consumer_key> keys;
  for (const auto& [key, consumer] : consumers_) keys.push_back(key);
  for (const auto& key : keys) consumer_cancelled(key.first, key.second, to_string(gone_reason_));
}

void rpc_session::taskFailed(kj::Exception&&) {
  // A deliver or cancelled call failed: the client is gone or broken. Its connection is torn
  // down when its capabilities are released; nothing to do here.
}

kj::Exception rpc_session::to_exception(const broker_failure& f) {
  return net::to_exception(f);
}

}  // namespace warren::net
