// warren::client::channel: the calls that are neither publishing nor consuming (opening and
// closing, topology, lookup), and the helpers every channel call shares (channel_calls.hpp).
// Publishing is in channel_publish.cpp, consuming and settling in channel_consume.cpp.
#include "warren/channel.hpp"

#include "client/channel_calls.hpp"
#include "client/client_runtime.hpp"
#include "client/client_state.hpp"
#include "client/client_wire.hpp"
#include "core/wire_fields.hpp"

#include <kj/exception.h>

#include <utility>

namespace warren::client {

// The helpers of channel_calls.hpp, whose contracts are stated there.

rpc::Channel::Client& cap_of(const std::shared_ptr<channel::state>& st) {
  if (!st->cap) throw error("CHANNEL_ERROR", "the channel is closed");
  if (st->settle_failure) throw *std::exchange(st->settle_failure, std::nullopt);
  return *st->cap;
}

kj::Promise<void> noting_failure(const std::shared_ptr<channel::state>& st,
                                 kj::Promise<void> settle) {
  return settle.catch_([st](kj::Exception&& e) {
    if (e.getType() != kj::Exception::Type::DISCONNECTED && !st->settle_failure)
      st->settle_failure = from_exception(e);
  });
}

std::vector<uint64_t> take_acks(channel::state& st) {
  std::lock_guard<std::mutex> guard(st.acks_mutex);
  return std::exchange(st.acks, {});
}

kj::Promise<void> send_acks(const std::shared_ptr<channel::state>& st,
                            const std::vector<uint64_t>& tags) {
  if (tags.empty() || !st->cap) return kj::READY_NOW;
  if (tags.size() == 1) {
    auto req = st->cap->ackRequest();
    req.setDeliveryTag(tags.front());
    return noting_failure(st, req.send().ignoreResult());
  }
  auto req = st->cap->ackEachRequest();
  auto list = req.initDeliveryTags(static_cast<unsigned>(tags.size()));
  for (unsigned i = 0; i < tags.size(); ++i) list.set(i, tags[i]);
  return noting_failure(st, req.send().ignoreResult());
}

kj::Promise<void> both(kj::Promise<void> first, kj::Promise<void> second) {
  return first.then([second = kj::mv(second)]() mutable { return kj::mv(second); });
}

channel::channel(std::shared_ptr<client_runtime> runtime, std::shared_ptr<state> st)
    : runtime_(std::move(runtime)), state_(std::move(st)) {}

channel::~channel() {
  // Releasing the capability closes the channel on the broker (requeueing its unacked).
  auto st = state_;
  *st->open = false;
  runtime_->fire([st]() {
    st->cap = nullptr;
    return kj::READY_NOW;
  });
  runtime_->drain_worker();  // no callback of this channel runs once it is gone
}

void channel::exchange_declare(const std::string& name, const std::string& type,
                               const exchange_options& o) {
  auto st = state_;
  runtime_->call<void>([st, name, type, o]() {
    auto req = cap_of(st).exchangeDeclareRequest();
    req.setName(name);
    req.setType(type);
    req.setDurable(o.durable);
    req.setAutoDelete(o.auto_delete);
    req.setInternal(o.internal);
    req.setPassive(o.passive);
    wire::write_table(o.arguments, req.initArguments(static_cast<unsigned>(o.arguments.size())));
    return req.send().ignoreResult();
  });
}

void channel::exchange_delete(const std::string& name, bool if_unused) {
  auto st = state_;
  runtime_->call<void>([st, name, if_unused]() {
    auto req = cap_of(st).exchangeDeleteRequest();
    req.setName(name);
    req.setIfUnused(if_unused);
    return req.send().ignoreResult();
  });
}

declare_ok channel::queue_declare(const std::string& name, const queue_options& o) {
  auto st = state_;
  return runtime_->call<declare_ok>([st, name, o]() {
    auto req = cap_of(st).queueDeclareRequest();
    req.setName(name);
    req.setDurable(o.durable);
    req.setExclusive(o.exclusive);
    req.setAutoDelete(o.auto_delete);
    req.setPassive(o.passive);
    req.setNode(o.node);
    wire::write_table(o.arguments, req.initArguments(static_cast<unsigned>(o.arguments.size())));
    return req.send().then([](capnp::Response<rpc::Channel::QueueDeclareResults>&& r) {
      return declare_ok{wire::text(r.getName()), r.getMessageCount(), r.getConsumerCount()};
    });
  });
}

uint32_t channel::queue_delete(const std::string& name, bool if_unused, bool if_empty, bool force) {
  auto st = state_;
  return runtime_->call<uint32_t>([st, name, if_unused, if_empty, force]() {
    auto req = cap_of(st).queueDeleteRequest();
    req.setName(name);
    req.setIfUnused(if_unused);
    req.setIfEmpty(if_empty);
    req.setForce(force);
    return req.send().then(
        [](capnp::Response<rpc::Channel::QueueDeleteResults>&& r) { return r.getMessageCount(); });
  });
}

uint32_t channel::queue_purge(const std::string& name) {
  auto st = state_;
  return runtime_->call<uint32_t>([st, name]() {
    auto req = cap_of(st).queuePurgeRequest();
    req.setName(name);
    return req.send().then(
        [](capnp::Response<rpc::Channel::QueuePurgeResults>&& r) { return r.getMessageCount(); });
  });
}

namespace {

// Bind and unbind take the same parameters.
template <class Request>
void fill_binding(Request& req, const std::string& queue, const std::string& exchange,
                  const std::string& key, const field_table& arguments) {
  req.setQueue(queue);
  req.setExchange(exchange);
  req.setBindingKey(key);
  wire::write_table(arguments, req.initArguments(static_cast<unsigned>(arguments.size())));
}

template <class Request>
void fill_exchange_binding(Request& req, const std::string& destination, const std::string& source,
                           const std::string& key, const field_table& arguments) {
  req.setDestination(destination);
  req.setSource(source);
  req.setBindingKey(key);
  wire::write_table(arguments, req.initArguments(static_cast<unsigned>(arguments.size())));
}

}  // namespace

void channel::exchange_bind(const std::string& destination, const std::string& source,
                            const std::string& key, const field_table& arguments) {
  auto st = state_;
  runtime_->call<void>([st, destination, source, key, arguments]() {
    auto req = cap_of(st).exchangeBindRequest();
    fill_exchange_binding(req, destination, source, key, arguments);
    return req.send().ignoreResult();
  });
}

void channel::exchange_unbind(const std::string& destination, const std::string& source,
                              const std::string& key, const field_table& arguments) {
  auto st = state_;
  runtime_->call<void>([st, destination, source, key, arguments]() {
    auto req = cap_of(st).exchangeUnbindRequest();
    fill_exchange_binding(req, destination, source, key, arguments);
    return req.send().ignoreResult();
  });
}

void channel::queue_bind(const std::string& queue, const std::string& exchange,
                         const std::string& key, const field_table& arguments) {
  auto st = state_;
  runtime_->call<void>([st, queue, exchange, key, arguments]() {
    auto req = cap_of(st).queueBindRequest();
    fill_binding(req, queue, exchange, key, arguments);
    return req.send().ignoreResult();
  });
}

void channel::queue_unbind(const std::string& queue, const std::string& exchange,
                           const std::string& key, const field_table& arguments) {
  auto st = state_;
  runtime_->call<void>([st, queue, exchange, key, arguments]() {
    auto req = cap_of(st).queueUnbindRequest();
    fill_binding(req, queue, exchange, key, arguments);
    return req.send().ignoreResult();
  });
}

std::optional<lookup_result> channel::lookup(const message_id& id) {
  auto st = state_;
  return runtime_->call<std::optional<lookup_result>>([st, id]() {
    auto req = cap_of(st).lookupRequest();
    req.setMessageId(kj::arrayPtr(id.bytes.data(), id.bytes.size()));
    return req.send().then([](capnp::Response<rpc::Channel::LookupResults>&& r) {
      auto result = r.getResult();
      if (result.isNotFound()) return std::optional<lookup_result>{};
      auto found = result.getFound();
      return std::optional<lookup_result>{lookup_result{wire::text(found.getQueue()),
                                                        wire::text(found.getState()),
                                                        read_delivery(found.getDelivery())}};
    });
  });
}

void channel::close() {
  if (closed_) return;
  closed_ = true;
  auto st = state_;
  *st->open = false;
  runtime_->call<void>([st]() -> kj::Promise<void> {
    if (!st->cap) return kj::READY_NOW;
    // What was acked is not requeued; a failed ack does not make the close fail.
    auto acks = send_acks(st, take_acks(*st)).catch_([](kj::Exception&&) {});
    auto closed = st->cap->closeRequest().send().then([st](auto&&) { st->cap = nullptr; });
    return both(kj::mv(acks), kj::mv(closed));
  });
  runtime_->drain_worker();
}

}  // namespace warren::client
