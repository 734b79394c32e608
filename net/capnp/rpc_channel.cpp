// The Channel capability's calls; its contract is in rpc_channel.hpp.
#include "net/capnp/rpc_channel.hpp"

#include "core/names.hpp"
#include "net/capnp/rpc_channel_ops.hpp"
#include "net/capnp/wire_convert.hpp"

namespace warren::net {

namespace {

class channel_impl final : public rpc::Channel::Server {
 public:
  channel_impl(std::shared_ptr<rpc_session> session, uint16_t id)
      : ops_(std::move(session), id), id_(id) {}

  ~channel_impl() noexcept(false) {
    if (!closed_) conn().close_channel(0, id_);
  }

 protected:
  kj::Promise<void> exchangeDeclare(ExchangeDeclareContext ctx) override {
    auto p = ctx.getParams();
    exchange_spec spec;
    spec.name = text(p.getName());
    bool passive = p.getPassive();
    auto type = text(p.getType());
    if (!passive && !parse_exchange_type(type, spec.type))
      throw_failure({reply_code::command_invalid, "unknown exchange type " + quote(type) +
                                                      "; use direct, fanout, topic or headers"});
    spec.durable = p.getDurable();
    spec.auto_delete = p.getAutoDelete();
    spec.internal = p.getInternal();
    spec.arguments = read_table(p.getArguments());
    return ask([&](uint64_t r) { conn().declare_exchange(r, id_, std::move(spec), passive); })
        .ignoreResult();
  }

  kj::Promise<void> exchangeDelete(ExchangeDeleteContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName());
    bool if_unused = p.getIfUnused();
    return ask([&](uint64_t r) { conn().delete_exchange(r, id_, name, if_unused); }).ignoreResult();
  }

  kj::Promise<void> queueDeclare(QueueDeclareContext ctx) override {
    auto p = ctx.getParams();
    queue_spec spec;
    spec.name = text(p.getName());
    spec.durable = p.getDurable();
    spec.exclusive = p.getExclusive();
    spec.auto_delete = p.getAutoDelete();
    spec.arguments = read_table(p.getArguments());
    spec.home = text(p.getNode());
    bool passive = p.getPassive();
    return ask([&](uint64_t r) { conn().declare_queue(r, id_, std::move(spec), passive); })
        .then([ctx](request_answer answer) mutable {
          const auto& info = answer_as<queue_info>(answer);
          auto res = ctx.getResults();
          res.setName(info.spec.name);
          res.setMessageCount(static_cast<uint32_t>(info.ready));
          res.setConsumerCount(info.consumers);
        });
  }

  kj::Promise<void> queueDelete(QueueDeleteContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName());
    bool if_unused = p.getIfUnused(), if_empty = p.getIfEmpty(), force = p.getForce();
    return ask([&](uint64_t r) { conn().delete_queue(r, id_, name, if_unused, if_empty, force); })
        .then([ctx](request_answer answer) mutable {
          ctx.getResults().setMessageCount(answer_as<uint32_t>(answer));
        });
  }

  kj::Promise<void> queuePurge(QueuePurgeContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().purge(r, id_, name); })
        .then([ctx](request_answer answer) mutable {
          ctx.getResults().setMessageCount(answer_as<uint32_t>(answer));
        });
  }

  kj::Promise<void> queueBind(QueueBindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getExchange()), text(p.getQueue()), text(p.getBindingKey()),
                   read_table(p.getArguments())};
    return ask([&](uint64_t r) { conn().bind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> queueUnbind(QueueUnbindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getExchange()), text(p.getQueue()), text(p.getBindingKey()),
                   read_table(p.getArguments())};
    return ask([&](uint64_t r) { conn().unbind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> exchangeBind(ExchangeBindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getSource()), text(p.getDestination()), text(p.getBindingKey()),
                   read_table(p.getArguments()), true};
    return ask([&](uint64_t r) { conn().bind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> exchangeUnbind(ExchangeUnbindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getSource()), text(p.getDestination()), text(p.getBindingKey()),
                   read_table(p.getArguments()), true};
    return ask([&](uint64_t r) { conn().unbind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> publish(PublishContext ctx) override {
    std::vector<message_ptr> msgs{read_outbound(ctx.getParams().getMessage())};
    return ops_.publish_one(std::move(msgs), ctx);
  }

  kj::Promise<void> publishBatch(PublishBatchContext ctx) override {
    auto in = ctx.getParams().getMessages();
    std::vector<message_ptr> msgs;
    msgs.reserve(in.size());
    for (auto m : in) msgs.push_back(read_outbound(m));
    return ops_.publish_batch(std::move(msgs), ctx);
  }

  kj::Promise<void> consume(ConsumeContext ctx) override {
    auto p = ctx.getParams();
    auto c = channel_ops::queue_request(text(p.getQueue()), p);
    c.exclusive = p.getExclusive();
    auto window = channel_ops::read_window(p.getWindow(), c);
    return ops_.consume(std::move(c), p.getConsumer(), window, ctx);
  }

  kj::Promise<void> consumeStream(ConsumeStreamContext ctx) override {
    auto p = ctx.getParams();
    auto c = channel_ops::stream_request(text(p.getQueue()), p);
    auto window = channel_ops::read_window(p.getWindow(), c);
    return ops_.consume(std::move(c), p.getConsumer(), window, ctx);
  }

  kj::Promise<void> commitOffset(CommitOffsetContext ctx) override {
    auto p = ctx.getParams();
    stream_command cmd{stream_command::commit, text(p.getQueue()), text(p.getGroup()),
                       static_cast<int64_t>(std::min<uint64_t>(p.getOffset(), INT64_MAX))};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](request_answer answer) mutable {
          const auto& reply = answer_as<stream_reply>(answer);
          if (!reply.groups.empty()) write_group(reply.groups[0], ctx.getResults().initGroup());
        });
  }

  kj::Promise<void> listGroups(ListGroupsContext ctx) override {
    stream_command cmd{stream_command::groups, text(ctx.getParams().getQueue()), {}, 0};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](request_answer answer) mutable {
          const auto& groups = answer_as<stream_reply>(answer).groups;
          auto out = ctx.getResults().initGroups(static_cast<unsigned>(groups.size()));
          for (unsigned i = 0; i < out.size(); ++i) write_group(groups[i], out[i]);
        });
  }

  kj::Promise<void> readOffset(ReadOffsetContext ctx) override {
    auto p = ctx.getParams();
    stream_command cmd{stream_command::read,
                       text(p.getQueue()),
                       {},
                       static_cast<int64_t>(std::min<uint64_t>(p.getOffset(), INT64_MAX))};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](request_answer answer) mutable {
          const auto& reply = answer_as<stream_reply>(answer);
          ctx.getResults().setFound(reply.found);
          if (!reply.found) return;
          delivery d{0, false, reply.delivery.msg, 0, reply.delivery.stream_offset};
          write_delivery(d, {}, ctx.getResults().initDelivery());
        });
  }

  kj::Promise<void> peek(PeekContext ctx) override {
    auto p = ctx.getParams();
    auto queue = text(p.getQueue());
    uint64_t from = p.getFrom();
    uint32_t count = p.getCount();
    if (count == 0 || count > 1000)
      throw_failure({reply_code::precondition_failed, "peek count must be from 1 to 1000"});
    return ask([&](uint64_t r) { conn().peek(r, id_, queue, from, count); })
        .then([ctx](request_answer answer) mutable {
          const auto& found = answer_as<std::vector<delivery>>(answer);
          auto out = ctx.getResults().initDeliveries(static_cast<unsigned>(found.size()));
          for (unsigned i = 0; i < out.size(); ++i) write_delivery(found[i], {}, out[i]);
        });
  }

  kj::Promise<void> cancel(CancelContext ctx) override {
    return ops_.cancel(text(ctx.getParams().getConsumerTag()));
  }

  kj::Promise<void> get(GetContext ctx) override {
    auto p = ctx.getParams();
    return ops_.get(text(p.getQueue()), p.getNoAck(), ctx.getResults());
  }

  kj::Promise<void> ack(AckContext ctx) override { return ops_.ack(ctx); }

  kj::Promise<void> ackEach(AckEachContext ctx) override {
    return ops_.ack_each(ctx.getParams().getDeliveryTags());
  }

  kj::Promise<void> nack(NackContext ctx) override { return ops_.nack(ctx); }

  kj::Promise<void> reject(RejectContext ctx) override { return ops_.reject(ctx); }

  kj::Promise<void> qos(QosContext ctx) override {
    uint32_t prefetch = ctx.getParams().getPrefetch();
    return ask([&](uint64_t r) { conn().qos(r, id_, prefetch); }).ignoreResult();
  }

  kj::Promise<void> confirmSelect(ConfirmSelectContext) override {
    return ask([&](uint64_t r) { conn().confirm_select(r, id_); }).ignoreResult();
  }

  kj::Promise<void> lookup(LookupContext ctx) override {
    auto raw = ctx.getParams().getMessageId();
    message_id id;
    if (!message_id_from_bytes(
            std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()), id))
      throw_failure({reply_code::syntax_error,
                     "a message id is 16 bytes, got " + std::to_string(raw.size())});
    return ask([&](uint64_t r) { conn().lookup(r, id_, id); })
        .then([ctx](request_answer answer) mutable {
          const auto& reply = answer_as<lookup_reply>(answer);
          auto res = ctx.getResults().initResult();
          if (!reply.found) {
            res.setNotFound();
            return;
          }
          auto found = res.initFound();
          found.setQueue(reply.queue);
          found.setState(reply.state);
          delivery d{0, reply.delivery.redelivered, reply.delivery.msg, 0,
                     reply.delivery.stream_offset};
          write_delivery(d, {}, found.initDelivery());
        });
  }

  kj::Promise<void> close(CloseContext) override {
    closed_ = true;
    return ask([&](uint64_t r) { conn().close_channel(r, id_); }).ignoreResult();
  }

  kj::Promise<void> recover(RecoverContext) override {
    return ask([&](uint64_t r) { conn().recover(r, id_); }).ignoreResult();
  }

 private:
  connection_ref& conn() { return ops_.conn(); }

  template <class Send>
  kj::Promise<request_answer> ask(Send&& send) {
    return ops_.ask(std::forward<Send>(send));
  }

  channel_ops ops_;
  uint16_t id_;
  bool closed_ = false;
};

}  // namespace

rpc::Channel::Client channel_capability(std::shared_ptr<rpc_session> session, uint16_t id) {
  return kj::heap<channel_impl>(std::move(session), id);
}

}  // namespace warren::net
