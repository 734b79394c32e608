#include "net/rpc_grants.hpp"

#include "actors/topic_trie.hpp"
#include "core/names.hpp"
#include "net/rpc_channel_ops.hpp"

namespace warren::net {

namespace {

kj::ArrayPtr<const kj::byte> token_bytes(const std::string& token) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(token.data()), token.size());
}

class publisher_impl final : public rpc::Publisher::Server {
 public:
  publisher_impl(std::shared_ptr<rpc_session> session, uint16_t channel, grant_record grant,
                 std::string token)
      : ops_(std::move(session), channel), grant_(std::move(grant)), token_(std::move(token)) {
    if (!grant_.key_pattern.empty()) keys_.insert(grant_.key_pattern, 0);
  }

 protected:
  kj::Promise<void> publish(PublishContext ctx) override {
    std::vector<message_ptr> msgs{read_granted(ctx.getParams().getMessage(), 0)};
    return ops_.publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      write_publish_result(ids.at(0), outcomes.at(0), ctx.getResults().initResult());
    });
  }

  kj::Promise<void> publishBatch(PublishBatchContext ctx) override {
    auto in = ctx.getParams().getMessages();
    std::vector<message_ptr> msgs;
    msgs.reserve(in.size());
    for (unsigned i = 0; i < in.size(); ++i) msgs.push_back(read_granted(in[i], i));
    return ops_.publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      auto list = ctx.getResults().initResults(static_cast<unsigned>(ids.size()));
      for (unsigned i = 0; i < ids.size(); ++i)
        write_publish_result(ids[i], outcomes.at(i), list[i]);
    });
  }

  kj::Promise<void> save(SaveContext ctx) override {
    ctx.getResults().setToken(token_bytes(token_));
    return kj::READY_NOW;
  }

  kj::Promise<void> info(InfoContext ctx) override {
    write_grant(grant_, ctx.getResults().initGrant());
    return kj::READY_NOW;
  }

 private:
  // Message `index` of the call, to the granted exchange; ACCESS_REFUSED (failing the whole
  // call, before anything is published) for another exchange or a key the pattern refuses.
  message_ptr read_granted(rpc::OutboundMessage::Reader in, unsigned index) {
    auto exchange = text(in.getExchange());
    auto key = text(in.getRoutingKey());
    auto refuse = [&](const std::string& why) {
      throw_failure({reply_code::access_refused, "message " + std::to_string(index) + ": " + why});
    };
    if (!exchange.empty() && exchange != grant_.target)
      refuse("this publisher may publish to exchange " + quote(grant_.target) + " only, not " +
             quote(exchange));
    // Checked before matching: the trie's work grows with the key's words.
    if (auto problem = check_key("routing key", key); !problem.empty())
      throw_failure(
          {reply_code::precondition_failed, "message " + std::to_string(index) + ": " + problem});
    if (!grant_.key_pattern.empty()) {
      std::vector<topic_trie::destination> matched;
      keys_.match(key, matched);
      if (matched.empty())
        refuse("routing key " + quote(key) + " does not match the grant's pattern " +
               quote(grant_.key_pattern));
    }
    return read_outbound(in, grant_.target);
  }

  channel_ops ops_;
  grant_record grant_;
  std::string token_;
  topic_trie keys_;  // the grant's pattern, when it has one
};

class queue_consumer_impl final : public rpc::QueueConsumer::Server {
 public:
  queue_consumer_impl(std::shared_ptr<rpc_session> session, uint16_t channel, grant_record grant,
                      std::string token)
      : ops_(std::move(session), channel), grant_(std::move(grant)), token_(std::move(token)) {}

 protected:
  kj::Promise<void> consume(ConsumeContext ctx) override {
    auto p = ctx.getParams();
    consume_request c;
    c.queue = grant_.target;
    c.tag = text(p.getConsumerTag());
    c.no_ack = p.getNoAck();
    c.prefetch = p.getPrefetch();
    c.priority = p.getPriority();
    auto window = channel_ops::read_window(p.getWindow(), c);
    return ops_.consume(
        std::move(c), p.getConsumer(), window,
        [ctx](const std::string& tag) mutable { ctx.getResults().setConsumerTag(tag); });
  }

  kj::Promise<void> cancel(CancelContext ctx) override {
    return ops_.cancel(text(ctx.getParams().getConsumerTag()));
  }

  kj::Promise<void> get(GetContext ctx) override {
    return ops_.get(grant_.target, ctx.getParams().getNoAck(), ctx.getResults());
  }

  kj::Promise<void> ack(AckContext ctx) override { return ops_.ack(ctx); }

  kj::Promise<void> ackEach(AckEachContext ctx) override {
    return ops_.ack_each(ctx.getParams().getDeliveryTags());
  }

  kj::Promise<void> nack(NackContext ctx) override { return ops_.nack(ctx); }

  kj::Promise<void> reject(RejectContext ctx) override { return ops_.reject(ctx); }

  kj::Promise<void> save(SaveContext ctx) override {
    ctx.getResults().setToken(token_bytes(token_));
    return kj::READY_NOW;
  }

  kj::Promise<void> info(InfoContext ctx) override {
    write_grant(grant_, ctx.getResults().initGrant());
    return kj::READY_NOW;
  }

 private:
  channel_ops ops_;
  grant_record grant_;
  std::string token_;
};

}  // namespace

kj::Promise<opened_grant> open_grant(std::shared_ptr<rpc_session> session, std::string token) {
  return session->request([&](uint64_t r) { session->conn().open(r); })
      .then([session](caf::message m) {
        if (!m.match_elements<grant_record>())  // a login by token always names its grant
          throw_failure({reply_code::internal_error, "the node did not say what the grant is"});
        auto grant = m.get_as<grant_record>(0);
        auto channel = session->allocate_channel();
        auto opened =
            session->request([&](uint64_t r) { session->conn().open_channel(r, channel); });
        if (grant.kind == grant_kind::publisher)
          opened = opened.then([session, channel](caf::message) {
            return session->request(
                [&](uint64_t r) { session->conn().confirm_select(r, channel); });
          });
        return opened.then(
            [grant, channel](caf::message) { return std::make_pair(grant, channel); });
      })
      .then([session, token = std::move(token)](std::pair<grant_record, uint16_t> opened) {
        auto& [grant, channel] = opened;
        opened_grant out;
        out.kind = grant.kind;
        if (grant.kind == grant_kind::publisher)
          out.publisher = kj::heap<publisher_impl>(session, channel, grant, token);
        else
          out.consumer = kj::heap<queue_consumer_impl>(session, channel, grant, token);
        return out;
      });
}

}  // namespace warren::net
