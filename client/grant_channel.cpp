// restore_grant: a grant's capability (a Publisher or a QueueConsumer) behind the client's
// ordinary channel. A local Channel capability forwards what the grant allows to it and refuses
// the rest, so channel's publishing, consuming (callbacks, worker thread, ack batching) and
// error handling work unchanged.
#include "warren/grants.hpp"

#include "client/client_runtime.hpp"
#include "client/client_state.hpp"
#include "core/hex.hpp"
#include "core/wire_fields.hpp"

namespace warren::client {

namespace {

kj::Exception refusal(const std::string& text) {
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                       kj::heapString("ACCESS_REFUSED: " + text));
}

// A Channel whose methods the grant does not cover fail with ACCESS_REFUSED naming the grant
// (the generated server answers them UNIMPLEMENTED, which becomes that refusal).
class grant_channel_base : public rpc::Channel::Server {
 public:
  explicit grant_channel_base(std::string what) : what_(std::move(what)) {}

  DispatchCallResult dispatchCall(
      uint64_t interface_id, uint16_t method_id,
      capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> ctx) override {
    auto what = what_;
    auto refuse = [what](kj::Exception&& e) -> kj::Promise<void> {
      if (e.getType() == kj::Exception::Type::UNIMPLEMENTED)
        return refusal("this channel is " + what + " and can do nothing else");
      return kj::mv(e);
    };
    try {
      auto r = rpc::Channel::Server::dispatchCall(interface_id, method_id, ctx);
      return {r.promise.catch_(kj::mv(refuse)), r.isStreaming};
    } catch (kj::Exception& e) {
      return {refuse(kj::mv(e)), false};
    }
  }

 protected:
  kj::Promise<void> confirmSelect(ConfirmSelectContext) override { return kj::READY_NOW; }
  kj::Promise<void> close(CloseContext) override { return kj::READY_NOW; }

  std::string what_;  // "a publisher grant of exchange 'x'"
};

class publisher_channel final : public grant_channel_base {
 public:
  publisher_channel(rpc::Publisher::Client cap, std::string exchange)
      : grant_channel_base("a publisher grant of exchange '" + exchange + "'"), cap_(kj::mv(cap)) {}

 protected:
  kj::Promise<void> publish(PublishContext ctx) override {
    auto req = cap_.publishRequest();
    req.setMessage(ctx.getParams().getMessage());
    return req.send().then([ctx](capnp::Response<rpc::Publisher::PublishResults>&& r) mutable {
      ctx.getResults().setResult(r.getResult());
    });
  }

  kj::Promise<void> publishBatch(PublishBatchContext ctx) override {
    auto req = cap_.publishBatchRequest();
    req.setMessages(ctx.getParams().getMessages());
    return req.send().then([ctx](capnp::Response<rpc::Publisher::PublishBatchResults>&& r) mutable {
      ctx.getResults().setResults(r.getResults());
    });
  }

 private:
  rpc::Publisher::Client cap_;
};

class consumer_channel final : public grant_channel_base {
 public:
  consumer_channel(rpc::QueueConsumer::Client cap, std::string queue)
      : grant_channel_base("a consumer grant of queue '" + queue + "'"),
        cap_(kj::mv(cap)),
        queue_(std::move(queue)) {}

 protected:
  kj::Promise<void> consume(ConsumeContext ctx) override {
    auto p = ctx.getParams();
    check_queue(wire::text(p.getQueue()));
    if (p.getExclusive()) throw refusal(what_ + ": its consumers cannot be exclusive");
    auto req = cap_.consumeRequest();
    req.setConsumerTag(p.getConsumerTag());
    req.setNoAck(p.getNoAck());
    req.setPrefetch(p.getPrefetch() != 0 ? p.getPrefetch() : prefetch_);
    req.setConsumer(p.getConsumer());
    req.setPriority(p.getPriority());
    req.setWindow(p.getWindow());
    return req.send().then([ctx](capnp::Response<rpc::QueueConsumer::ConsumeResults>&& r) mutable {
      ctx.getResults().setConsumerTag(r.getConsumerTag());
    });
  }

  kj::Promise<void> cancel(CancelContext ctx) override {
    auto req = cap_.cancelRequest();
    req.setConsumerTag(ctx.getParams().getConsumerTag());
    return req.send().ignoreResult();
  }

  kj::Promise<void> get(GetContext ctx) override {
    check_queue(wire::text(ctx.getParams().getQueue()));
    auto req = cap_.getRequest();
    req.setNoAck(ctx.getParams().getNoAck());
    return req.send().then([ctx](capnp::Response<rpc::QueueConsumer::GetResults>&& r) mutable {
      ctx.getResults().setResult(r.getResult());
    });
  }

  kj::Promise<void> ack(AckContext ctx) override {
    auto req = cap_.ackRequest();
    req.setDeliveryTag(ctx.getParams().getDeliveryTag());
    req.setMultiple(ctx.getParams().getMultiple());
    return req.send().ignoreResult();
  }

  kj::Promise<void> ackEach(AckEachContext ctx) override {
    auto req = cap_.ackEachRequest();
    req.setDeliveryTags(ctx.getParams().getDeliveryTags());
    return req.send().ignoreResult();
  }

  kj::Promise<void> nack(NackContext ctx) override {
    auto p = ctx.getParams();
    auto req = cap_.nackRequest();
    req.setDeliveryTag(p.getDeliveryTag());
    req.setMultiple(p.getMultiple());
    req.setRequeue(p.getRequeue());
    return req.send().ignoreResult();
  }

  kj::Promise<void> reject(RejectContext ctx) override {
    auto p = ctx.getParams();
    auto req = cap_.rejectRequest();
    req.setDeliveryTag(p.getDeliveryTag());
    req.setRequeue(p.getRequeue());
    return req.send().ignoreResult();
  }

  // The channel's default prefetch, for consumers that give none (as Channel.qos).
  kj::Promise<void> qos(QosContext ctx) override {
    prefetch_ = ctx.getParams().getPrefetch();
    return kj::READY_NOW;
  }

 private:
  void check_queue(const std::string& queue) {
    if (queue != queue_) throw refusal(what_ + ", not of queue '" + queue + "'");
  }

  rpc::QueueConsumer::Client cap_;
  std::string queue_;
  uint32_t prefetch_ = 0;
};

}  // namespace

std::unique_ptr<channel> restore_grant(const connect_options& options, const std::string& token) {
  std::string raw;
  if (!from_hex(token, raw) || raw.empty())
    throw error("SYNTAX_ERROR", "a grant token is hex digits, not '" + token + "'");
  auto runtime = std::make_shared<client_runtime>(options);
  auto ch = std::make_shared<channel::state>();
  auto* rt = runtime.get();
  runtime->call<void>([rt, ch, raw]() {
    auto req = rt->broker().restoreRequest();
    req.setToken(kj::arrayPtr(reinterpret_cast<const kj::byte*>(raw.data()), raw.size()));
    // Its kind and its target decide the channel.
    return req.send().then([ch](capnp::Response<rpc::Broker::RestoreResults>&& r) {
      auto g = r.getGranted();
      if (g.isPublisher()) {
        auto cap = g.getPublisher();
        return cap.infoRequest().send().then(
            [ch, cap](capnp::Response<rpc::Publisher::InfoResults>&& info) mutable {
              ch->cap = kj::heap<rpc::Channel::Client>(kj::heap<publisher_channel>(
                  kj::mv(cap), wire::text(info.getGrant().getTarget())));
            });
      }
      auto cap = g.getConsumer();
      return cap.infoRequest().send().then(
          [ch, cap](capnp::Response<rpc::QueueConsumer::InfoResults>&& info) mutable {
            ch->cap = kj::heap<rpc::Channel::Client>(
                kj::heap<consumer_channel>(kj::mv(cap), wire::text(info.getGrant().getTarget())));
          });
    });
  });
  return std::unique_ptr<channel>(new channel(std::move(runtime), ch));
}

}  // namespace warren::client
