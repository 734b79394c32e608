// Consuming for the connection actor (see connection_parts.hpp): consumers and their credit,
// deliveries with this channel's tags, gets, settling, and the consumer timeout.
#include "actors/connection/connection_parts.hpp"

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <iterator>
#include <utility>

namespace warren::connection_parts {

namespace {

void grant_credit(self_ptr self, uint16_t id, channel_state& ch, const std::string& tag,
                  uint32_t n) {
  auto c = ch.consumers.find(tag);
  if (c == ch.consumers.end() || n == 0) return;
  if (!c->second.queue) {
    c->second.unsent_credit += n;  // sent once the queue has taken the consumer
    return;
  }
  tell_queue(self, c->second.queue, credit_atom::value, self_handle(self), id, tag, n);
}

}  // namespace

void grant_all(self_ptr self, uint16_t id, channel_state& ch, const channel_credit::grants& g) {
  for (const auto& [tag, n] : g) grant_credit(self, id, ch, tag, n);
}

namespace {

// A consumer is gone from the channel: its prefetch credit goes to the others.
void drop_consumer(self_ptr self, uint16_t id, channel_state& ch, const std::string& tag) {
  ch.consumers.erase(tag);
  if (ch.credit.tracks(tag)) grant_all(self, id, ch, ch.credit.remove(tag));
}

// A consume the vhost or the queue refused: its reserved tag goes, and the failure closes the
// channel, unless the client closed that channel meanwhile (the call is then answered as for a
// closed channel, and a channel opened again under its number is left alone).
void consume_failed(self_ptr self, uint64_t request, uint16_t id, uint64_t serial,
                    const std::string& tag, const caf::error& err) {
  auto* ch = same_channel(self, id, serial);
  if (ch == nullptr) {
    reply_channel_gone(self, request, id);
    return;
  }
  drop_consumer(self, id, *ch, tag);
  fail(self, request, id, err);
}

// Settles deliveries taken out of the channel's tags with `kind`: one message per queue, and
// the credit their consumers earned back.
void settle_taken(self_ptr self, uint16_t id, channel_state& ch,
                  const std::vector<channel_state::tags::held>& taken, settle_kind kind) {
  auto grouped = channel_state::tags::group(taken);
  if (kind == settle_kind::ack) self->state.traffic.acked += taken.size();
  for (auto& [queue, ids] : grouped.by_queue)
    tell_queue(self, queue, settle_atom::value, self_handle(self), std::move(ids), kind);
  for (const auto& [consumer, n] : grouped.by_consumer)
    grant_all(self, id, ch, ch.credit.settled(consumer, n));
}

// Settles tag (or everything up to it) with `kind`; false when the tag is not outstanding.
bool settle(self_ptr self, uint16_t id, channel_state& ch, uint64_t tag, bool multiple,
            settle_kind kind) {
  auto taken = ch.unacked.take(tag, multiple);
  if (!taken) return false;
  settle_taken(self, id, ch, *taken, kind);
  return true;
}

// Arms the consumer-timeout timer for the oldest unacked delivery of the connection, if any.
void watch_timeout(self_ptr self) {
  auto& st = self->state;
  if (st.consumer_timeout_ms == 0 || st.timeout_check_scheduled) return;
  std::optional<int64_t> oldest;
  for (const auto& [id, ch] : st.channels)
    if (auto first = ch.unacked.oldest_ms(); ch.open && first)
      oldest = std::min(oldest.value_or(INT64_MAX), *first);
  if (!oldest) return;
  st.timeout_check_scheduled = true;
  auto delay = std::max<int64_t>(*oldest + st.consumer_timeout_ms - steady_ms(), 1);
  self->delayed_send(self, std::chrono::milliseconds(delay), timeout_atom::value);
}

}  // namespace

// Closes every channel holding a delivery unacked for longer than the consumer timeout, as
// RabbitMQ does: 406 PRECONDITION_FAILED, and its unacked messages go back to their queues.
void check_timeouts(self_ptr self) {
  auto& st = self->state;
  st.timeout_check_scheduled = false;
  auto now = steady_ms();
  for (auto& [id, ch] : st.channels) {
    auto first = ch.unacked.oldest_ms();
    if (!ch.open || !first || now - *first < st.consumer_timeout_ms) continue;
    broker_failure reason{
        reply_code::precondition_failed,
        "delivery acknowledgement on channel " + std::to_string(id) +
            " timed out. Timeout value used: " + std::to_string(st.consumer_timeout_ms) + " ms"};
    log(log_level::info, "connection",
        quote(st.hello.client_name) + " from " + st.hello.peer + ": " + reason.text);
    close_channel(self, id, reason);
    st.link->channel_closed(id, ch.serial, reason);
  }
  watch_timeout(self);
}

namespace {

// Hands a queue's deliveries to the front door with this channel's delivery tags.
void forward_deliveries(self_ptr self, uint16_t id, channel_state& ch, const std::string& tag,
                        bool no_ack, const caf::actor& queue, std::vector<queued_delivery>& batch) {
  std::vector<delivery> out;
  out.reserve(batch.size());
  if (!no_ack) ch.credit.delivered(tag, static_cast<uint32_t>(batch.size()));
  for (auto& d : batch) {
    auto tag_no = ch.unacked.next();
    if (!no_ack) ch.unacked.hold(tag_no, {queue, d.delivery_id, tag, steady_ms()});
    self->state.traffic.count_out(d.msg->body.size(), d.redelivered);
    out.push_back({tag_no, d.redelivered, std::move(d.msg), 0, d.stream_offset});
  }
  self->state.link->deliver(id, tag, std::move(out));
  if (!no_ack) watch_timeout(self);
}

// The queue the vhost named takes the consumer; the consume is answered with the tag then.
void start_consumer(self_ptr self, uint64_t request, uint64_t serial, const caf::actor& q,
                    const consumer_spec& spec) {
  auto id = spec.channel;
  auto tag = spec.tag;
  self->request(queue_handle(q), caf::infinite, consume_atom::value, spec)
      .then(
          [=]() {
            auto* c = same_channel(self, id, serial);
            if (c == nullptr) {
              tell_queue(self, q, cancel_atom::value, self_handle(self), id, tag, true);
              reply_channel_gone(self, request, id);
              return;
            }
            auto& consumer = c->consumers[tag];
            consumer.queue = q;
            // A queue on another node can vanish with its node; its monitor tells us then.
            if (q.node() != self->node()) self->monitor(q);
            grant_credit(self, id, *c, tag, std::exchange(consumer.unsent_credit, 0));
            touch_queue(*c, q);
            self->state.link->reply(request, {}, make_answer(tag));
          },
          [=](caf::error& err) { consume_failed(self, request, id, serial, tag, err); });
}

// A cancelled consumer leaves the channel. If the queue requeued its unacked deliveries, their
// tags are void now; otherwise (AMQP's basic.cancel) they stay unacked, to be settled.
void forget_consumer(self_ptr self, uint16_t id, const std::string& tag, bool requeued) {
  auto chan = self->state.channels.find(id);
  if (chan == self->state.channels.end() || !chan->second.open) return;
  auto& ch = chan->second;
  drop_consumer(self, id, ch, tag);
  ch.unacked.forget_consumer(tag, requeued);
}

// A queue's answer to a get: the message with the channel's next tag, or none.
void got(self_ptr self, uint64_t request, uint16_t id, bool no_ack, const caf::actor& q,
         get_reply& r) {
  auto c = self->state.channels.find(id);
  if (c == self->state.channels.end() || !c->second.open) {
    // The channel closed meanwhile; the queue requeues what it handed out for this channel when
    // the close reaches it.
    reply_channel_gone(self, request, id);
    return;
  }
  if (!r.found) {
    self->state.link->reply(request, {}, {});
    return;
  }
  auto& ch = c->second;
  // Every delivery takes the next tag, acked or not: a tag of 0 means "no message" to some
  // clients.
  delivery d{ch.unacked.next(), r.delivery.redelivered, r.delivery.msg, r.remaining};
  self->state.traffic.count_out(d.msg->body.size(), d.redelivered);
  if (!no_ack) {
    ch.unacked.hold(d.tag, {q, r.delivery.delivery_id, {}, steady_ms()});
    touch_queue(ch, q);
    watch_timeout(self);
  }
  self->state.link->reply(request, {}, make_answer(std::move(d)));
}

caf::error unknown_tag(uint64_t tag, uint16_t id) {
  return make_broker_error(
      reply_code::precondition_failed,
      "unknown delivery tag " + std::to_string(tag) + " on channel " + std::to_string(id));
}

// A settle naming a tag that is not outstanding: AMQP closes the channel; the Cap'n Proto door
// fails that call alone (its client_hello says which).
void refuse_settle(self_ptr self, uint64_t request, uint16_t id, uint64_t tag) {
  if (self->state.hello.bad_settle_closes_channel)
    fail(self, request, id, unknown_tag(tag, id));
  else
    self->state.link->reply(request, unknown_tag(tag, id), {});
}

}  // namespace

// Reserves the tag, asks the vhost for the queue, and hands the queue the consumer.
void consume(self_ptr self, uint64_t request, uint16_t id, consume_request& c) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr || !allowed(self, request, id, access_kind::read, "queue", c.queue)) return;
  if (c.tag.empty()) c.tag = generated_name("amq.ctag-");
  auto tag = c.tag;
  if (auto problem = check_name("consumer tag", tag); !problem.empty()) {
    fail(self, request, id, make_broker_error(reply_code::precondition_failed, problem));
    return;
  }
  if (ch->consumers.count(tag) != 0) {
    fail(self, request, id,
         make_broker_error(
             reply_code::not_allowed,
             "consumer tag " + quote(tag) + " is already in use on channel " + std::to_string(id)));
    return;
  }
  auto prefetch = c.no_ack ? 0 : (c.prefetch == 0 ? ch->default_prefetch : c.prefetch);
  // Consumers limited by acks (their own prefetch, the channel's, or both) start with what the
  // limits allow; the others with a window refilled as deliveries are written.
  uint32_t initial = c.window != 0 ? c.window : unlimited_consumer_window;
  if (ch->credit.limited(c.no_ack, prefetch)) initial = ch->credit.add(tag, prefetch);
  // Reserve the tag now so a second consume with it fails even before the queue answers.
  auto serial = ch->serial;
  auto& reserved = ch->consumers[tag];
  reserved.queue_name = c.queue;
  reserved.no_ack = c.no_ack;
  reserved.prefetch = prefetch;
  consumer_spec spec{self_handle(self),
                     self->state.hello.client_name,
                     id,
                     tag,
                     c.no_ack,
                     c.exclusive,
                     prefetch,
                     initial,
                     c.priority,
                     c.offset,
                     c.group};
  self->request(vhost_handle(self->state.vhost), caf::infinite, find_atom::value,
                queues_atom::value, c.queue, self_handle(self))
      .then([=](caf::actor& q) { start_consumer(self, request, serial, q, spec); },
            [=](caf::error& err) { consume_failed(self, request, id, serial, tag, err); });
}

void cancel(self_ptr self, uint64_t request, uint16_t id, const std::string& tag,
            bool requeue_unacked) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr) return;
  auto c = ch->consumers.find(tag);
  if (c == ch->consumers.end() || !c->second.queue) {
    self->state.link->reply(request, {}, {});
    return;
  }
  // Answer once the queue has dropped the consumer: deliveries it sent before that are then
  // already here, so no-ack ones reach the client ahead of the cancel's answer.
  c->second.cancelling = true;
  c->second.keep_unacked = !requeue_unacked;
  auto forget = [=] {
    forget_consumer(self, id, tag, requeue_unacked);
    self->state.link->reply(request, {}, {});
  };
  self->request(queue_handle(c->second.queue), caf::infinite, cancel_atom::value, self_handle(self),
                id, tag, requeue_unacked)
      .then([=]() { forget(); }, [=](caf::error&) { forget(); });
}

void queue_delete_answered(self_ptr self, const std::string& queue) {
  auto& st = self->state;
  auto d = st.deleting.find(queue);
  if (d == st.deleting.end() || --d->second > 0) return;
  st.deleting.erase(d);
  std::vector<connection_state::held_cancel> now;
  auto& held = st.cancels_after_delete;
  auto mine = std::stable_partition(held.begin(), held.end(),
                                    [&](const auto& c) { return c.queue != queue; });
  now.assign(std::make_move_iterator(mine), std::make_move_iterator(held.end()));
  held.erase(mine, held.end());
  for (const auto& c : now) cancelled_by_queue(self, c.channel, c.tag, c.reason);
}

void cancelled_by_queue(self_ptr self, uint16_t id, const std::string& tag,
                        const std::string& reason) {
  auto c = self->state.channels.find(id);
  if (c == self->state.channels.end() || !c->second.open) return;
  auto consumer = c->second.consumers.find(tag);
  if (consumer != c->second.consumers.end() &&
      self->state.deleting.count(consumer->second.queue_name) != 0) {
    self->state.cancels_after_delete.push_back({id, tag, reason, consumer->second.queue_name});
    return;
  }
  if (consumer != c->second.consumers.end()) {
    drop_consumer(self, id, c->second, tag);
    self->state.link->consumer_cancelled(id, tag, reason);
  }
}

void queue_node_down(self_ptr self, const caf::actor_addr& queue) {
  std::vector<std::pair<uint16_t, std::string>> gone;
  for (const auto& [id, ch] : self->state.channels)
    for (const auto& [tag, consumer] : ch.consumers)
      if (consumer.queue && consumer.queue.address() == queue) gone.emplace_back(id, tag);
  for (const auto& [id, tag] : gone)
    cancelled_by_queue(self, id, tag, "the queue's node went down");
}

void deliver(self_ptr self, uint16_t id, const std::string& tag, bool no_ack,
             std::vector<queued_delivery>& batch) {
  // Deliveries for a channel that closed meanwhile are dropped here: the queue still holds them
  // as pending for this channel and requeues them when the close reaches it.
  auto c = self->state.channels.find(id);
  if (c == self->state.channels.end() || !c->second.open) return;
  auto& ch = c->second;
  // A manual-ack delivery for a consumer already cancelled was requeued by the queue when the
  // cancel reached it: passing it on would hand out a message that is ready again.
  auto consumer = ch.consumers.find(tag);
  if (!no_ack && (consumer == ch.consumers.end() ||
                  (consumer->second.cancelling && !consumer->second.keep_unacked)))
    return;
  auto queue = caf::actor_cast<caf::actor>(self->current_sender());
  forward_deliveries(self, id, ch, tag, no_ack, queue, batch);
}

void flushed(self_ptr self, uint16_t id, const std::string& tag, uint32_t n) {
  // The front door wrote n deliveries to the network: consumers that are not limited by acks
  // (no-ack or no prefetch) get that much credit back.
  auto c = self->state.channels.find(id);
  if (c == self->state.channels.end() || !c->second.open) return;
  auto consumer = c->second.consumers.find(tag);
  if (consumer == c->second.consumers.end()) return;
  if (!c->second.credit.tracks(tag)) grant_credit(self, id, c->second, tag, n);
}

void get(self_ptr self, uint64_t request, uint16_t id, const std::string& queue, bool no_ack) {
  if (!open_channel(self, request, id) ||
      !allowed(self, request, id, access_kind::read, "queue", queue))
    return;
  self->request(vhost_handle(self->state.vhost), caf::infinite, find_atom::value,
                queues_atom::value, queue, self_handle(self))
      .then(
          [=](caf::actor& q) {
            self->request(queue_handle(q), caf::infinite, get_atom::value, self_handle(self), id,
                          no_ack)
                .then([=](get_reply& r) { got(self, request, id, no_ack, q, r); },
                      [=](caf::error& err) { fail(self, request, id, err); });
          },
          [=](caf::error& err) { fail(self, request, id, err); });
}

void peek(self_ptr self, uint64_t request, uint16_t id, const std::string& queue, uint64_t from,
          uint32_t count) {
  if (!open_channel(self, request, id) ||
      !allowed(self, request, id, access_kind::read, "queue", queue))
    return;
  auto answer = [=](std::vector<queued_delivery>& found) {
    std::vector<delivery> out;
    for (auto& q : found)
      out.push_back({q.delivery_id, q.redelivered, std::move(q.msg), 0, q.stream_offset});
    self->state.link->reply(request, {}, make_answer(std::move(out)));
  };
  self->request(vhost_handle(self->state.vhost), caf::infinite, find_atom::value,
                queues_atom::value, queue, self_handle(self))
      .then(
          [=](caf::actor& q) {
            self->request(queue_handle(q), caf::infinite, peek_atom::value, from, count)
                .then(answer, [=](caf::error& err) { fail(self, request, id, err); });
          },
          [=](caf::error& err) { fail(self, request, id, err); });
}

void settle_request(self_ptr self, uint64_t request, uint16_t id, uint64_t tag, bool multiple,
                    settle_kind kind) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr) return;
  if (!settle(self, id, *ch, tag, multiple, kind)) {
    refuse_settle(self, request, id, tag);
    return;
  }
  self->state.link->reply(request, {}, {});
}

namespace {

// The Cap'n Proto door's ackEach: every known tag is acked whatever comes around it, so how the
// client cut its acks into calls does not change what is settled; the first unknown one is
// named in the call's error.
void ack_each_known(self_ptr self, uint64_t request, uint16_t id, channel_state& ch,
                    const std::vector<uint64_t>& tags) {
  std::vector<channel_state::tags::held> taken;
  std::optional<uint64_t> unknown;
  for (auto tag : tags) {
    if (auto one = ch.unacked.take(tag, false))
      taken.insert(taken.end(), one->begin(), one->end());
    else if (!unknown)
      unknown = tag;
  }
  settle_taken(self, id, ch, taken, settle_kind::ack);
  if (unknown)
    refuse_settle(self, request, id, *unknown);
  else
    self->state.link->reply(request, {}, {});
}

}  // namespace

void ack_each_request(self_ptr self, uint64_t request, uint16_t id,
                      const std::vector<uint64_t>& tags) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr) return;
  if (!self->state.hello.bad_settle_closes_channel) {
    ack_each_known(self, request, id, *ch, tags);
    return;
  }
  auto [taken, unknown] = ch->unacked.take_each(tags);
  settle_taken(self, id, *ch, taken, settle_kind::ack);  // the ones before an unknown tag
  if (unknown) {
    fail(self, request, id, unknown_tag(*unknown, id));
    return;
  }
  self->state.link->reply(request, {}, {});
}

void recover(self_ptr self, uint64_t request, uint16_t id) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr) return;
  if (!ch->unacked.empty()) settle(self, id, *ch, ch->unacked.newest(), true, settle_kind::requeue);
  self->state.link->reply(request, {}, {});
}

}  // namespace warren::connection_parts
