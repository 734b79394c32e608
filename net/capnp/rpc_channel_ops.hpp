// rpc_channel_ops: what a Cap'n Proto capability does on one channel of its session, shared by
// `Channel` (rpc_channel.hpp) and the grants' `Publisher` and `QueueConsumer` (rpc_grants.hpp):
// asking the connection actor, publishing, consuming with a delivery window, settling and
// getting, and answering those calls, whose parameters and results are alike in both.
#pragma once

#include "core/names.hpp"
#include "net/capnp/rpc_session.hpp"
#include "net/capnp/wire_convert.hpp"

#include <memory>
#include <string>
#include <vector>

namespace warren::net {

/// One publish result: Warren's id of the message and what became of it.
void write_publish_result(const message_id& id, publish_outcome outcome,
                          rpc::PublishResult::Builder out);

class channel_ops {
 public:
  channel_ops(std::shared_ptr<rpc_session> session, uint16_t id)
      : session_(std::move(session)), id_(id) {}

  const std::shared_ptr<rpc_session>& session() const { return session_; }
  uint16_t id() const { return id_; }
  connection_ref& conn() { return session_->conn(); }

  /// `send(request_id)` sends one request of this channel to the connection actor.
  template <class Send>
  kj::Promise<request_answer> ask(Send&& send) {
    return session_->request(std::forward<Send>(send));
  }

  /// Publishes `msgs`; `write(ids, outcomes)` fills the call's results.
  template <class Write>
  kj::Promise<void> publish(std::vector<message_ptr> msgs, Write write) {
    std::vector<message_id> ids;
    ids.reserve(msgs.size());
    for (const auto& m : msgs) ids.push_back(m->id);
    return ask([&](uint64_t r) { conn().publish(r, id_, std::move(msgs)); })
        .then([write, ids = std::move(ids)](request_answer answer) mutable {
          write(ids, answer_as<std::vector<publish_outcome>>(answer));
        });
  }

  /// publish() for a publish call (of Channel or Publisher): `msgs` is its one message.
  template <class Context>
  kj::Promise<void> publish_one(std::vector<message_ptr> msgs, Context ctx) {
    return publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      write_publish_result(ids.at(0), outcomes.at(0), ctx.getResults().initResult());
    });
  }

  /// publish() for a publishBatch call (of Channel or Publisher): a result for each message.
  template <class Context>
  kj::Promise<void> publish_batch(std::vector<message_ptr> msgs, Context ctx) {
    return publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      auto list = ctx.getResults().initResults(static_cast<unsigned>(ids.size()));
      for (unsigned i = 0; i < ids.size(); ++i)
        write_publish_result(ids[i], outcomes.at(i), list[i]);
    });
  }

  /// Subscribes `consumer` for a consume or consumeStream call (of Channel or QueueConsumer),
  /// whose results get the tag. Deliveries can reach this loop before the consume reply does,
  /// so the capability is registered first and withdrawn if the broker refuses.
  template <class Context>
  kj::Promise<void> consume(consume_request c, rpc::Consumer::Client consumer,
                            rpc_session::delivery_window window, Context ctx) {
    if (c.tag.empty()) c.tag = generated_name("amq.ctag-");
    auto tag = c.tag;
    bool added = session_->add_consumer(id_, tag, kj::mv(consumer), window);
    auto session = session_;
    auto id = id_;
    return ask([&](uint64_t r) { conn().consume(r, id_, std::move(c)); })
        .then(
            [ctx, tag](request_answer) mutable -> kj::Promise<void> {
              ctx.getResults().setConsumerTag(tag);
              return kj::READY_NOW;
            },
            [session, id, tag, added](kj::Exception&& e) -> kj::Promise<void> {
              if (added) session->remove_consumer(id, tag);
              return kj::mv(e);
            });
  }

  /// The consume's DeliveryWindow, checked (PRECONDITION_FAILED past its limits); a consumer
  /// not limited by acks may have as many deliveries beyond its queue as the window's calls can
  /// carry.
  static rpc_session::delivery_window read_window(rpc::DeliveryWindow::Reader w,
                                                  consume_request& c);

  /// A consume call's request (of Channel, or of QueueConsumer for its queue), but for
  /// `exclusive`, which only Channel's has.
  template <class Params>
  static consume_request queue_request(std::string queue, Params p) {
    auto c = subscription(std::move(queue), p);
    c.no_ack = p.getNoAck();
    c.priority = p.getPriority();
    return c;
  }

  /// A consumeStream call's request (of Channel, or of QueueConsumer for its queue): the group
  /// name checked (PRECONDITION_FAILED).
  template <class Params>
  static consume_request stream_request(std::string queue, Params p) {
    auto c = subscription(std::move(queue), p);
    c.offset = read_stream_offset(p.getOffset());
    c.group = text(p.getGroup());
    if (!c.group.empty())
      if (auto problem = check_name("consumer group name", c.group); !problem.empty())
        throw_failure({reply_code::precondition_failed, problem});
    return c;
  }

  kj::Promise<void> cancel(const std::string& tag);
  kj::Promise<void> settle(uint64_t tag, bool multiple, settle_kind kind);

  /// ack, nack and reject of Channel and of QueueConsumer, whose parameters are the same.
  template <class Context>
  kj::Promise<void> ack(Context ctx) {
    auto p = ctx.getParams();
    return settle(p.getDeliveryTag(), p.getMultiple(), settle_kind::ack);
  }
  template <class Context>
  kj::Promise<void> nack(Context ctx) {
    auto p = ctx.getParams();
    return settle(p.getDeliveryTag(), p.getMultiple(),
                  p.getRequeue() ? settle_kind::requeue : settle_kind::reject);
  }
  template <class Context>
  kj::Promise<void> reject(Context ctx) {
    auto p = ctx.getParams();
    return settle(p.getDeliveryTag(), false,
                  p.getRequeue() ? settle_kind::requeue : settle_kind::reject);
  }
  kj::Promise<void> ack_each(capnp::List<uint64_t>::Reader tags);

  /// Gets one message; `results` is the call's results (of Channel.get or QueueConsumer.get).
  template <class Results>
  kj::Promise<void> get(const std::string& queue, bool no_ack, Results results) {
    return ask([&](uint64_t r) { conn().get(r, id_, queue, no_ack); })
        .then(
            [results](request_answer answer) mutable { write_get(answer, results.initResult()); });
  }

 private:
  // What consume and consumeStream calls ask alike.
  template <class Params>
  static consume_request subscription(std::string queue, Params p) {
    consume_request c;
    c.queue = std::move(queue);
    c.tag = text(p.getConsumerTag());
    c.prefetch = p.getPrefetch();
    return c;
  }

  static void write_get(const request_answer& answer, rpc::Channel::GetResult::Builder out);

  std::shared_ptr<rpc_session> session_;
  uint16_t id_;
};

}  // namespace warren::net
