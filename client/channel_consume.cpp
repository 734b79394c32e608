// warren::client::channel's consuming: consumers whose callbacks run on the worker thread, acks
// gathered while they run, settling, get, and reading streams. Its own file because the
// callbacks' threading and the ack batching are one mechanism, kept together.
#include "warren/channel.hpp"

#include "client/channel_calls.hpp"
#include "client/client_runtime.hpp"
#include "client/client_state.hpp"
#include "client/client_wire.hpp"
#include "core/wire_fields.hpp"

#include <kj/exception.h>

#include <algorithm>
#include <utility>

namespace warren::client {

namespace {

// While the worker runs the callbacks of one delivery batch, single acks only gather; they go
// out when the batch is done (or every ack_flush_count), so a consumer that acks each message
// makes one call per batch rather than one per message, and its credit comes back in one piece.
constexpr size_t ack_flush_count = 64;

struct ack_scope {
  std::vector<std::pair<std::shared_ptr<channel::state>, client_runtime*>> touched;
};
thread_local ack_scope* current_ack_scope = nullptr;

// The acks are taken on the kj thread, in the order of its queue, never here: a cancel posted
// by another thread meanwhile then either still finds them gathered and sends them ahead of
// itself, or runs after they went out. (Taken here, they could reach the wire behind the
// cancel, which requeues what they ack.)
void flush_acks(const std::shared_ptr<channel::state>& st, client_runtime* runtime) {
  {
    std::lock_guard<std::mutex> guard(st->acks_mutex);
    if (st->acks.empty()) return;
  }
  runtime->fire([st]() { return send_acks(st, take_acks(*st)); });
}

// Runs one message callback; what it threw, as text, or "" when it returned.
std::string run_handler(const channel::message_handler& handler, const delivery& d) {
  try {
    handler(d);
    return {};
  } catch (const std::exception& e) {
    return std::string("the message callback threw: ") + e.what();
  } catch (...) {
    return "the message callback threw";
  }
}

// Receives deliveries on the kj thread and runs the user's callbacks on the worker thread. A
// deliver call returns once its callbacks ran, which is what the consumer's delivery window
// counts.
class consumer_impl final : public rpc::Consumer::Server {
 public:
  consumer_impl(client_runtime* runtime, channel::message_handler on_message,
                channel::cancel_handler on_cancel, std::shared_ptr<std::atomic<bool>> live,
                std::shared_ptr<std::atomic<bool>> channel_open)
      : runtime_(runtime),
        on_message_(std::make_shared<channel::message_handler>(std::move(on_message))),
        on_cancel_(std::make_shared<channel::cancel_handler>(std::move(on_cancel))),
        live_(std::move(live)),
        channel_open_(std::move(channel_open)) {}

 protected:
  kj::Promise<void> deliver(DeliverContext ctx) override {
    std::vector<delivery> batch;
    for (auto d : ctx.getParams().getDeliveries()) batch.push_back(read_delivery(d));
    auto pair = kj::newPromiseAndCrossThreadFulfiller<void>();
    auto done =
        std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(pair.fulfiller));
    auto handler = on_message_;
    runtime_->run_on_worker(
        [batch = std::move(batch), done, handler, live = live_, open = channel_open_]() {
          ack_scope scope;
          current_ack_scope = &scope;
          std::string failure;
          for (const auto& d : batch) {
            // Cancelled or closed meanwhile: the user was promised no more callbacks; what was not
            // handed over stays unacked and goes back to the queue.
            if (!*live || !*open) break;
            failure = run_handler(*handler, d);
            if (!failure.empty()) {
              *live = false;  // no more callbacks: the broker cancels the consumer
              break;
            }
          }
          current_ack_scope = nullptr;
          for (const auto& [st, runtime] : scope.touched) flush_acks(st, runtime);
          // A throwing callback fails the deliver call: the broker then cancels the consumer,
          // requeues its unacked messages and calls `cancelled` with the reason.
          if (failure.empty())
            (*done)->fulfill();
          else
            (*done)->reject(kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                                          kj::heapString(failure.data(), failure.size())));
        });
    return kj::mv(pair.promise);
  }

  kj::Promise<void> cancelled(CancelledContext ctx) override {
    auto tag = wire::text(ctx.getParams().getConsumerTag());
    auto reason = wire::text(ctx.getParams().getReason());
    auto handler = on_cancel_;
    if (*handler)
      runtime_->run_on_worker([handler, tag, reason, open = channel_open_]() {
        if (*open) (*handler)(tag, reason);
      });
    return kj::READY_NOW;
  }

 private:
  client_runtime* runtime_;
  std::shared_ptr<channel::message_handler> on_message_;
  std::shared_ptr<channel::cancel_handler> on_cancel_;
  std::shared_ptr<std::atomic<bool>> live_;
  std::shared_ptr<std::atomic<bool>> channel_open_;
};

// A consumer's tag, registered with the flag its callbacks check.
kj::Promise<std::string> register_consumer(const std::shared_ptr<channel::state>& st,
                                           std::shared_ptr<std::atomic<bool>> live,
                                           kj::Promise<std::string> tag) {
  return tag.then([st, live](std::string&& t) {
    st->consumers[t] = live;
    return kj::mv(t);
  });
}

}  // namespace

std::string channel::consume(const std::string& queue, const consume_options& o,
                             message_handler on_message, cancel_handler on_cancel) {
  auto st = state_;
  auto* rt = runtime_.get();
  return runtime_->call<std::string>([st, rt, queue, o, on_message = std::move(on_message),
                                      on_cancel = std::move(on_cancel)]() mutable {
    auto req = cap_of(st).consumeRequest();
    req.setQueue(queue);
    req.setConsumerTag(o.tag);
    req.setNoAck(o.no_ack);
    req.setExclusive(o.exclusive);
    req.setPrefetch(o.prefetch);
    req.setPriority(o.priority);
    auto window = req.initWindow();
    window.setMaxCalls(o.max_calls);
    window.setMaxBatch(o.max_batch);
    auto live = std::make_shared<std::atomic<bool>>(true);
    req.setConsumer(
        kj::heap<consumer_impl>(rt, std::move(on_message), std::move(on_cancel), live, st->open));
    return register_consumer(st, live,
                             req.send().then([](capnp::Response<rpc::Channel::ConsumeResults>&& r) {
                               return wire::text(r.getConsumerTag());
                             }));
  });
}

std::string channel::consume_stream(const std::string& queue, const stream_offset& offset,
                                    const std::string& group, uint32_t prefetch,
                                    message_handler on_message, cancel_handler on_cancel,
                                    const std::string& tag) {
  auto st = state_;
  auto* rt = runtime_.get();
  return runtime_->call<std::string>([st, rt, queue, offset, group, prefetch, tag,
                                      on_message = std::move(on_message),
                                      on_cancel = std::move(on_cancel)]() mutable {
    auto req = cap_of(st).consumeStreamRequest();
    req.setQueue(queue);
    req.setConsumerTag(tag);
    write_stream_offset(offset, req.initOffset());
    req.setGroup(group);
    req.setPrefetch(prefetch);
    auto live = std::make_shared<std::atomic<bool>>(true);
    req.setConsumer(
        kj::heap<consumer_impl>(rt, std::move(on_message), std::move(on_cancel), live, st->open));
    return register_consumer(
        st, live, req.send().then([](capnp::Response<rpc::Channel::ConsumeStreamResults>&& r) {
          return wire::text(r.getConsumerTag());
        }));
  });
}

group_row channel::commit_offset(const std::string& queue, const std::string& group,
                                 uint64_t offset) {
  auto st = state_;
  return runtime_->call<group_row>([st, queue, group, offset]() {
    auto req = cap_of(st).commitOffsetRequest();
    req.setQueue(queue);
    req.setGroup(group);
    req.setOffset(offset);
    return req.send().then([](capnp::Response<rpc::Channel::CommitOffsetResults>&& r) {
      return read_group_row(r.getGroup());
    });
  });
}

std::vector<group_row> channel::list_groups(const std::string& queue) {
  auto st = state_;
  return runtime_->call<std::vector<group_row>>([st, queue]() {
    auto req = cap_of(st).listGroupsRequest();
    req.setQueue(queue);
    return req.send().then([](capnp::Response<rpc::Channel::ListGroupsResults>&& r) {
      std::vector<group_row> out;
      for (auto g : r.getGroups()) out.push_back(read_group_row(g));
      return out;
    });
  });
}

std::optional<delivery> channel::read_offset(const std::string& queue, uint64_t offset) {
  auto st = state_;
  return runtime_->call<std::optional<delivery>>([st, queue, offset]() {
    auto req = cap_of(st).readOffsetRequest();
    req.setQueue(queue);
    req.setOffset(offset);
    return req.send().then([](capnp::Response<rpc::Channel::ReadOffsetResults>&& r) {
      if (!r.getFound()) return std::optional<delivery>{};
      return std::optional<delivery>{read_delivery(r.getDelivery())};
    });
  });
}

std::vector<delivery> channel::peek(const std::string& queue, uint64_t from, uint32_t count) {
  auto st = state_;
  return runtime_->call<std::vector<delivery>>([st, queue, from, count]() {
    auto req = cap_of(st).peekRequest();
    req.setQueue(queue);
    req.setFrom(from);
    req.setCount(count);
    return req.send().then([](capnp::Response<rpc::Channel::PeekResults>&& r) {
      std::vector<delivery> out;
      for (auto d : r.getDeliveries()) out.push_back(read_delivery(d));
      return out;
    });
  });
}

void channel::cancel(const std::string& consumer_tag) {
  auto st = state_;
  runtime_->call<void>([st, consumer_tag]() {
    auto req = cap_of(st).cancelRequest();
    req.setConsumerTag(consumer_tag);
    // Acks gathered in a callback that is still running go first: the cancel requeues what is
    // unacked, and an ack arriving after it would name a tag the channel no longer holds.
    auto acks = send_acks(st, take_acks(*st));
    auto cancelled = req.send().then([st, consumer_tag](auto&&) {
      if (auto c = st->consumers.find(consumer_tag); c != st->consumers.end()) {
        *c->second = false;
        st->consumers.erase(c);
      }
    });
    return both(kj::mv(acks), kj::mv(cancelled));
  });
}

std::optional<delivery> channel::get(const std::string& queue, bool no_ack) {
  auto st = state_;
  return runtime_->call<std::optional<delivery>>([st, queue, no_ack]() {
    auto req = cap_of(st).getRequest();
    req.setQueue(queue);
    req.setNoAck(no_ack);
    return req.send().then([](capnp::Response<rpc::Channel::GetResults>&& r) {
      auto result = r.getResult();
      if (result.isEmpty()) return std::optional<delivery>{};
      return std::optional<delivery>{read_delivery(result.getDelivery())};
    });
  });
}

void channel::settle(uint64_t tag, bool multiple, int kind) {
  auto st = state_;
  // Single acks made before this settle go out before it (taken on the kj thread, as in
  // flush_acks).
  runtime_->fire([st, tag, multiple, kind]() -> kj::Promise<void> {
    auto acks = send_acks(st, take_acks(*st));
    if (!st->cap) return acks;
    kj::Promise<void> sent = nullptr;
    if (kind == 0) {
      auto req = st->cap->ackRequest();
      req.setDeliveryTag(tag);
      req.setMultiple(multiple);
      sent = req.send().ignoreResult();
    } else {
      auto req = st->cap->nackRequest();
      req.setDeliveryTag(tag);
      req.setMultiple(multiple);
      req.setRequeue(kind == 1);
      sent = req.send().ignoreResult();
    }
    return both(kj::mv(acks), noting_failure(st, kj::mv(sent)));
  });
}

void channel::ack(uint64_t delivery_tag, bool multiple) {
  if (multiple) {
    settle(delivery_tag, true, 0);
    return;
  }
  auto st = state_;
  size_t gathered = 0;
  {
    std::lock_guard<std::mutex> guard(st->acks_mutex);
    st->acks.push_back(delivery_tag);
    gathered = st->acks.size();
  }
  if (auto* scope = current_ack_scope) {
    // Inside a consumer callback: sent when its batch is done.
    bool known = std::any_of(scope->touched.begin(), scope->touched.end(),
                             [&](const auto& entry) { return entry.first == st; });
    if (!known) scope->touched.emplace_back(st, runtime_.get());
    if (gathered >= ack_flush_count) flush_acks(st, runtime_.get());
    return;
  }
  // Elsewhere the first ack of a burst posts the send; later ones ride along with it.
  if (gathered == 1) runtime_->fire([st]() { return send_acks(st, take_acks(*st)); });
}

void channel::nack(uint64_t delivery_tag, bool multiple, bool requeue) {
  settle(delivery_tag, multiple, requeue ? 1 : 2);
}

void channel::reject(uint64_t delivery_tag, bool requeue) {
  settle(delivery_tag, false, requeue ? 1 : 2);
}

void channel::qos(uint32_t prefetch) {
  auto st = state_;
  runtime_->call<void>([st, prefetch]() {
    auto req = cap_of(st).qosRequest();
    req.setPrefetch(prefetch);
    return req.send().ignoreResult();
  });
}

void channel::recover() {
  auto st = state_;
  runtime_->call<void>([st]() {
    auto req = cap_of(st).recoverRequest();
    auto acks = send_acks(st, take_acks(*st));  // what was acked is not requeued
    return both(kj::mv(acks), req.send().ignoreResult());
  });
}

}  // namespace warren::client
