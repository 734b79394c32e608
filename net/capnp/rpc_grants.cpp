#include "net/capnp/rpc_grants.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/routing/topic_trie.hpp"
#include "core/names.hpp"
#include "core/reply_code.hpp"
#include "net/capnp/rpc_channel_ops.hpp"

namespace warren::net {

namespace {

kj::ArrayPtr<const kj::byte> token_bytes(const std::string& token) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(token.data()), token.size());
}

// Whether a call's failure is a refusal that closed its channel ("CODE: text", CODE one that
// closes an AMQP channel).
bool closes_channel(const kj::Exception& e) {
  std::string description = e.getDescription().cStr();
  reply_code code;
  auto end = description.find(": ");
  return end != std::string::npos && parse_reply_code_name(description.substr(0, end), code) &&
         is_channel_error(code);
}

// Opens channel `id` of a grant's session, in confirm mode for a publisher.
kj::Promise<void> open_grant_channel(std::shared_ptr<rpc_session> session, uint16_t id,
                                     grant_kind kind) {
  auto opened = session->request([&](uint64_t r) { session->conn().open_channel(r, id); });
  if (kind != grant_kind::publisher) return opened.ignoreResult();
  return opened
      .then([session, id](request_answer) {
        return session->request([&](uint64_t r) { session->conn().confirm_select(r, id); });
      })
      .ignoreResult();
}

// A grant's hidden channel. A refused call closes it as any channel error closes an AMQP
// channel (NOT_FOUND, PRECONDITION_FAILED, ...); the next call opens a new one first, so that
// no refusal of one call breaks the capability. The new one has a fresh id: late answers,
// deliveries and acks of the closed one can never reach it.
class grant_channel {
 public:
  grant_channel(std::shared_ptr<rpc_session> session, uint16_t id, grant_kind kind)
      : ops_(std::move(session), id), kind_(kind) {}

  /// Runs `use(ops)` once the channel is open. Capnp keeps the capability, and so this, alive
  /// while one of its calls runs.
  template <class Use>
  kj::Promise<void> with(Use use) {
    return ready().then([this, use = kj::mv(use)]() mutable {
      auto id = ops_.id();
      return use(ops_).catch_([this, id](kj::Exception&& e) -> kj::Promise<void> {
        // A refusal that closes the channel: the connection actor says so too (channel_closed),
        // but its notice may reach this loop after the client has read the failure and called
        // again, which would then meet the closed channel (CHANNEL_ERROR).
        if (closes_channel(e)) ops_.session()->mark_broker_closed(id);
        return kj::mv(e);
      });
    });
  }

 private:
  kj::Promise<void> ready() {
    auto session = ops_.session();
    if (session->take_broker_closed(ops_.id())) {
      session->conn().close_channel(0, ops_.id());  // forgets the closed one
      auto id = session->allocate_channel();
      ops_ = channel_ops(session, id);
      auto generation = ++generation_;
      reopened_ = false;
      reopening_ = open_grant_channel(session, id, kind_)
                       .then(
                           [this, generation] {
                             if (generation == generation_) reopened_ = true;
                           },
                           [session, id](kj::Exception&& e) {
                             session->mark_broker_closed(id);  // the next call tries again
                             kj::throwFatalException(kj::mv(e));
                           })
                       .fork();
    }
    if (reopened_) return kj::READY_NOW;
    KJ_IF_MAYBE (opening, reopening_) return opening->addBranch();
    return kj::READY_NOW;
  }

  channel_ops ops_;
  grant_kind kind_;
  bool reopened_ = true;     // no reopening under way
  uint64_t generation_ = 0;  // of the latest reopening: only it may say it is done
  kj::Maybe<kj::ForkedPromise<void>> reopening_;
};

// What the capabilities of both kinds of grant hold, and how they answer save and info alike:
// the hidden channel, the grant, and the token that restores the capability. `Server` is the
// capability's generated server class.
template <class Server>
class grant_capability : public Server {
 public:
  grant_capability(std::shared_ptr<rpc_session> session, uint16_t channel, grant_kind kind,
                   grant_record grant, std::string token)
      : channel_(std::move(session), channel, kind),
        grant_(std::move(grant)),
        token_(std::move(token)) {}

 protected:
  kj::Promise<void> save(typename Server::SaveContext ctx) override {
    ctx.getResults().setToken(token_bytes(token_));
    return kj::READY_NOW;
  }

  kj::Promise<void> info(typename Server::InfoContext ctx) override {
    write_grant(grant_, ctx.getResults().initGrant());
    return kj::READY_NOW;
  }

  grant_channel channel_;
  grant_record grant_;

 private:
  std::string token_;
};

class publisher_impl final : public grant_capability<rpc::Publisher::Server> {
 public:
  publisher_impl(std::shared_ptr<rpc_session> session, uint16_t channel, grant_record grant,
                 std::string token)
      : grant_capability(std::move(session), channel, grant_kind::publisher, std::move(grant),
                         std::move(token)) {
    if (!grant_.key_pattern.empty()) keys_.insert(grant_.key_pattern, 0);
  }

 protected:
  kj::Promise<void> publish(PublishContext ctx) override {
    std::vector<message_ptr> msgs{read_granted(ctx.getParams().getMessage(), 0)};
    return channel_.with([ctx, msgs = std::move(msgs)](channel_ops& ops) mutable {
      return ops.publish_one(std::move(msgs), ctx);
    });
  }

  kj::Promise<void> publishBatch(PublishBatchContext ctx) override {
    auto in = ctx.getParams().getMessages();
    std::vector<message_ptr> msgs;
    msgs.reserve(in.size());
    for (unsigned i = 0; i < in.size(); ++i) msgs.push_back(read_granted(in[i], i));
    return channel_.with([ctx, msgs = std::move(msgs)](channel_ops& ops) mutable {
      return ops.publish_batch(std::move(msgs), ctx);
    });
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

  topic_trie keys_;  // the grant's pattern, when it has one
};

class queue_consumer_impl final : public grant_capability<rpc::QueueConsumer::Server> {
 public:
  queue_consumer_impl(std::shared_ptr<rpc_session> session, uint16_t channel, grant_record grant,
                      std::string token)
      : grant_capability(std::move(session), channel, grant_kind::consumer, std::move(grant),
                         std::move(token)) {}

 protected:
  kj::Promise<void> consume(ConsumeContext ctx) override {
    auto p = ctx.getParams();
    auto c = channel_ops::queue_request(grant_.target, p);
    auto window = channel_ops::read_window(p.getWindow(), c);
    return subscribe(std::move(c), p.getConsumer(), window, ctx);
  }

  kj::Promise<void> consumeStream(ConsumeStreamContext ctx) override {
    auto p = ctx.getParams();
    auto c = channel_ops::stream_request(grant_.target, p);
    // A group's committed offset is the grantor's to move: a grant reads, it does not commit.
    if (!c.group.empty())
      throw_failure({reply_code::access_refused,
                     "a consumer grant reads a stream from an offset; it cannot join consumer "
                     "group " +
                         quote(c.group)});
    auto window = channel_ops::read_window(p.getWindow(), c);
    return subscribe(std::move(c), p.getConsumer(), window, ctx);
  }

  kj::Promise<void> cancel(CancelContext ctx) override {
    return channel_.with([tag = text(ctx.getParams().getConsumerTag())](channel_ops& ops) {
      return ops.cancel(tag);
    });
  }

  kj::Promise<void> get(GetContext ctx) override {
    return channel_.with([ctx, queue = grant_.target](channel_ops& ops) mutable {
      return ops.get(queue, ctx.getParams().getNoAck(), ctx.getResults());
    });
  }

  kj::Promise<void> ack(AckContext ctx) override {
    return channel_.with([ctx](channel_ops& ops) mutable { return ops.ack(ctx); });
  }

  kj::Promise<void> ackEach(AckEachContext ctx) override {
    return channel_.with([ctx](channel_ops& ops) mutable {
      return ops.ack_each(ctx.getParams().getDeliveryTags());
    });
  }

  kj::Promise<void> nack(NackContext ctx) override {
    return channel_.with([ctx](channel_ops& ops) mutable { return ops.nack(ctx); });
  }

  kj::Promise<void> reject(RejectContext ctx) override {
    return channel_.with([ctx](channel_ops& ops) mutable { return ops.reject(ctx); });
  }

 private:
  template <class Context>
  kj::Promise<void> subscribe(consume_request c, rpc::Consumer::Client consumer,
                              rpc_session::delivery_window window, Context ctx) {
    return channel_.with(
        [c = std::move(c), consumer = kj::mv(consumer), window, ctx](channel_ops& ops) mutable {
          return ops.consume(std::move(c), kj::mv(consumer), window, ctx);
        });
  }
};

}  // namespace

kj::Promise<opened_grant> open_grant(std::shared_ptr<rpc_session> session, std::string token) {
  return session->request([&](uint64_t r) { session->conn().open(r); })
      .then([session](request_answer answer) {
        const auto* named = std::get_if<grant_record>(&answer);
        if (named == nullptr)  // a login by token always names its grant
          throw_failure({reply_code::internal_error, "the node did not say what the grant is"});
        auto grant = *named;
        auto channel = session->allocate_channel();
        return open_grant_channel(session, channel, grant.kind).then([grant, channel] {
          return std::make_pair(grant, channel);
        });
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
