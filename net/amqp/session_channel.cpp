// session: channel methods. Each becomes one request to the connection actor, answered with
// its -ok; a channel carries out its methods in order.
#include "net/amqp/session.hpp"

#include "actors/queue/queue_arguments.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "net/amqp/method_args.hpp"
#include "net/amqp/properties.hpp"

#include <caf/send.hpp>

namespace warren::amqp {

bool session::hold(const frame_view& f) {
  auto c = channels_.find(f.channel);
  if (c == channels_.end() || c->second.settling()) return false;
  auto& ch = c->second;
  if (!ch.held.empty()) {
    ch.held.push_back(f.owned());
    return true;
  }
  if (f.type != frame_type::method || ch.publish) return false;
  reader r(f.payload);
  method_id m{r.short_uint(), r.short_uint()};
  if (m == basic_publish || m == basic_ack || m == basic_nack || m == basic_reject ||
      m == channel_close)
    return false;
  send_publishes(f.channel, ch);
  if (ch.publishes_in_flight == 0) return false;
  ch.held.push_back(f.owned());
  return true;
}

void session::release_held(uint16_t id) {
  auto c = channels_.find(id);
  if (c == channels_.end()) return;
  auto held = std::move(c->second.held);
  c->second.held.clear();
  try {
    while (!held.empty() && phase_ == phase::running) {
      auto f = std::move(held.front());
      held.pop_front();
      on_frame(frame_view::of(f));
      c = channels_.find(id);
      if (c == channels_.end()) return;
      if (!c->second.held.empty()) {
        // Held again: the rest waits behind it.
        for (auto& rest : held) c->second.held.push_back(std::move(rest));
        break;
      }
    }
  } catch (const protocol_error& e) {
    connection_error(e.code, e.what(), current_method_);
  }
  flush_channels();
}

void session::on_method(uint16_t id, std::string_view payload) {
  reader r(payload);
  method_id m{r.short_uint(), r.short_uint()};
  current_method_ = m;
  if (id == 0) return on_connection_method(m, r);
  if (phase_ != phase::running)
    throw protocol_error(
        reply_code::command_invalid,
        method_name(m) + " on channel " + std::to_string(id) + " before the connection is open");
  if (id > channel_max_)
    throw protocol_error(reply_code::channel_error, "channel " + std::to_string(id) +
                                                        " is above the negotiated maximum " +
                                                        std::to_string(channel_max_));
  if (m == channel_open) return open_channel(id);
  auto c = channels_.find(id);
  if (c == channels_.end())
    throw protocol_error(reply_code::channel_error, method_name(m) + " on channel " +
                                                        std::to_string(id) + ", which is not open");
  auto& ch = c->second;
  if (ch.closing) {
    if (m == channel_close_ok) {
      ch.closing = false;
      if (!ch.client_closing) forget_channel(id);
    }
    // Both sides closed at once: each answers the other's close.
    if (m == channel_close && !ch.client_closing) send_method(id, method_payload(channel_close_ok));
    return;
  }
  if (ch.client_closing) return;  // after its close, a client sends nothing that counts
  if (ch.publish)
    throw protocol_error(reply_code::unexpected_frame,
                         method_name(m) + " on channel " + std::to_string(id) +
                             " while the content of a basic.publish was expected");
  ch.last_method = m;
  // Publishes and acks gathered so far go first, in the order the client sent them.
  if (!(m == basic_publish)) {
    send_publishes(id, ch);
    if (!(m == basic_ack)) send_acks(id, ch);
  }
  on_channel_method(id, ch, m, r);
}

void session::open_channel(uint16_t id) {
  if (channels_.count(id) != 0)
    throw protocol_error(reply_code::channel_error,
                         "channel " + std::to_string(id) + " is already open");
  channels_[id].serial = ++channel_opens_;
  request(
      id, channel_open,
      [this, id](request_answer&) {
        auto w = method_payload(channel_open_ok);
        w.long_string("");
        send_method(id, std::move(w));
      },
      [&](uint64_t r) { conn_.open_channel(r, id); });
}

void session::forget_channel(uint16_t id) {
  auto c = channels_.find(id);
  if (c == channels_.end()) return;
  for (const auto& [tag, call] : c->second.calls)
    if (!call->answered) call->first_tag = 0;  // no confirms for a closed channel
  c->second.tx_publishes.clear();
  c->second.tx_bytes = 0;
  c->second.tx_settles.clear();
  recount_tx(c->second);
  channels_.erase(c);
}

void session::channel_error(uint16_t id, reply_code code, const std::string& text,
                            method_id method) {
  auto c = channels_.find(id);
  // A client's close does not stop the error: RabbitMQ sends its close first, then the
  // close-ok for the client's.
  if (c == channels_.end() || c->second.closing) return;
  c->second.closing = true;
  c->second.publish.reset();
  c->second.gathered.clear();
  c->second.acks.clear();
  c->second.tx_publishes.clear();
  c->second.tx_bytes = 0;
  c->second.tx_settles.clear();
  recount_tx(c->second);
  // The broker side of the channel goes too: its unacked messages are requeued. (A client's
  // close already asked for that.)
  if (!c->second.client_closing) conn_.close_channel(0, id);
  auto w = method_payload(channel_close);
  w.short_uint(static_cast<uint16_t>(code));
  w.short_string(reply_text(code, text));
  w.short_uint(method.class_id);
  w.short_uint(method.method);
  send_method(id, std::move(w));
  if (c->second.client_closing) {
    // The client's close crossed ours: its close-ok goes right behind our close, as RabbitMQ
    // sends them. Clients that free the channel number on our close (the Go client does) must
    // not meet this close-ok on a channel they opened again under that number.
    c->second.client_closing = false;
    send_method(id, method_payload(channel_close_ok));
  }
  flush_output();
}

const std::vector<std::pair<method_id, session::method_handler>>& session::channel_methods() {
  // The hot ones first: the table is searched in order.
  static const std::vector<std::pair<method_id, method_handler>> table{
      {basic_publish, &session::on_basic_publish},
      {basic_ack, &session::on_basic_ack},
      {basic_nack, &session::on_basic_nack_or_reject},
      {basic_reject, &session::on_basic_nack_or_reject},
      {basic_get, &session::on_basic_get},
      {basic_qos, &session::on_basic_qos},
      {basic_consume, &session::on_basic_consume},
      {basic_cancel, &session::on_basic_cancel},
      {basic_recover, &session::on_basic_recover},
      {basic_recover_async, &session::on_basic_recover},
      {channel_close, &session::on_channel_close},
      {channel_close_ok, &session::on_channel_close_ok},
      {channel_flow, &session::on_channel_flow},
      {exchange_declare, &session::on_exchange_declare},
      {exchange_delete, &session::on_exchange_delete},
      {exchange_bind, &session::on_binding},
      {exchange_unbind, &session::on_binding},
      {queue_declare, &session::on_queue_declare},
      {queue_bind, &session::on_binding},
      {queue_unbind, &session::on_binding},
      {queue_purge, &session::on_queue_purge_or_delete},
      {queue_delete, &session::on_queue_purge_or_delete},
      {confirm_select, &session::on_confirm_select},
      {tx_select, &session::on_tx_select},
      {tx_commit, &session::on_tx_commit},
      {tx_rollback, &session::on_tx_rollback},
  };
  return table;
}

void session::on_channel_method(uint16_t id, channel& ch, method_id m, reader& r) {
  for (const auto& [method, handler] : channel_methods())
    if (method == m) return (this->*handler)(id, ch, m, r);
  throw protocol_error(reply_code::command_invalid,
                       "unexpected " + method_name(m) + " on channel " + std::to_string(id));
}

session::answer_handler session::answer_with(uint16_t id, method_id ok, bool no_wait) {
  if (no_wait) return nullptr;
  return [this, id, ok](request_answer&) { send_method(id, method_payload(ok)); };
}

void session::on_basic_publish(uint16_t, channel& ch, method_id, reader& r) {
  auto a = args::read_publish(r);
  if (a.immediate)  // RabbitMQ's words: clients match them
    throw protocol_error(reply_code::not_implemented, "immediate=true");
  incoming_publish p;
  p.exchange = std::move(a.exchange);
  p.routing_key = std::move(a.routing_key);
  p.mandatory = a.mandatory;
  ch.publish = std::move(p);
  has_published_ = true;
}

void session::on_basic_ack(uint16_t id, channel& ch, method_id m, reader& r) {
  auto a = args::read_ack(r);
  if (ch.tx) {
    if (ch.tx_settles.size() >= max_tx_messages)
      return channel_error(id, reply_code::precondition_failed,
                           "a transaction holds at most " + std::to_string(max_tx_messages) +
                               " settlements uncommitted; commit sooner",
                           m);
    ch.tx_settles.push_back({m, a.tag, a.multiple, settle_kind::ack});
    recount_tx(ch);
    return;
  }
  if (!a.multiple) {
    ch.acks.push_back(a.tag);
    return;
  }
  send_acks(id, ch);
  send_settle(id, m, a.tag, true, settle_kind::ack, nullptr);
}

void session::on_basic_nack_or_reject(uint16_t id, channel& ch, method_id m, reader& r) {
  auto a = m == basic_nack ? args::read_nack(r) : args::read_reject(r);
  auto kind = a.requeue ? settle_kind::requeue : settle_kind::reject;
  if (ch.tx) {
    if (ch.tx_settles.size() >= max_tx_messages)
      return channel_error(id, reply_code::precondition_failed,
                           "a transaction holds at most " + std::to_string(max_tx_messages) +
                               " settlements uncommitted; commit sooner",
                           m);
    ch.tx_settles.push_back({m, a.tag, a.multiple, kind});
    recount_tx(ch);
    return;
  }
  send_settle(id, m, a.tag, a.multiple, kind, nullptr);
}

void session::send_settle(uint16_t id, method_id m, uint64_t tag, bool multiple, settle_kind kind,
                          answer_handler done) {
  request(id, m, std::move(done), [&](uint64_t q) { conn_.settle(q, id, tag, multiple, kind); });
}

void session::on_channel_close(uint16_t id, channel& ch, method_id m, reader& r) {
  auto a = args::read_close(r);
  log(log_level::debug, "amqp",
      peer_ + " closed channel " + std::to_string(id) + " (" + std::to_string(a.code) + " " +
          a.text + ")");
  ch.client_closing = true;  // nothing more is taken on it
  request(
      id, m,
      [this, id, serial = ch.serial](request_answer&) {
        auto c = channels_.find(id);
        // Already answered (our own close crossed it), or this is a newer channel by that number.
        if (c == channels_.end() || c->second.serial != serial || !c->second.client_closing) return;
        c->second.client_closing = false;
        send_method(id, method_payload(channel_close_ok));
        if (!c->second.closing) forget_channel(id);
      },
      [&](uint64_t q) { conn_.close_channel(q, id); });
}

void session::on_channel_close_ok(uint16_t, channel&, method_id, reader&) {
  // The answer to a close we did not send: ignored.
}

void session::on_channel_flow(uint16_t id, channel&, method_id m, reader& r) {
  if (!args::read_flow(r).active)
    return channel_error(id, reply_code::not_implemented,
                         "channel.flow active=false is not supported; use basic.qos", m);
  auto w = method_payload(channel_flow_ok);
  w.bits({true});
  send_method(id, std::move(w));
}

void session::on_exchange_declare(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_exchange_declare(r);
  exchange_spec spec;
  spec.name = std::move(a.name);
  spec.durable = a.durable;
  spec.auto_delete = a.auto_delete;
  spec.internal = a.internal;
  spec.arguments = to_fields(a.arguments);
  if (!a.passive && !parse_exchange_type(a.type, spec.type))
    throw protocol_error(reply_code::command_invalid,
                         "unknown exchange type " + quote(a.type) +
                             " (direct, fanout, topic and headers are known)");
  request(id, m, answer_with(id, exchange_declare_ok, a.no_wait),
          [&](uint64_t q) { conn_.declare_exchange(q, id, std::move(spec), a.passive); });
}

void session::on_exchange_delete(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_exchange_delete(r);
  request(id, m, answer_with(id, exchange_delete_ok, a.no_wait),
          [&](uint64_t q) { conn_.delete_exchange(q, id, std::move(a.name), a.if_unused); });
}

// queue.bind / queue.unbind and exchange.bind / exchange.unbind: one binding_spec each.
void session::on_binding(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_binding(m, r);
  binding_spec b{std::move(a.source), std::move(a.destination), std::move(a.key),
                 to_fields(a.arguments), m == exchange_bind || m == exchange_unbind};
  bool bind = m == queue_bind || m == exchange_bind;
  method_id ok = m == queue_bind     ? queue_bind_ok
                 : m == queue_unbind ? queue_unbind_ok
                 : bind              ? exchange_bind_ok
                                     : exchange_unbind_ok;
  request(id, m, answer_with(id, ok, a.no_wait), [&](uint64_t q) {
    if (bind)
      conn_.bind(q, id, std::move(b));
    else
      conn_.unbind(q, id, std::move(b));
  });
}

void session::on_queue_declare(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_queue_declare(r);
  queue_spec spec;
  spec.name = std::move(a.name);
  spec.durable = a.durable;
  spec.exclusive = a.exclusive;
  spec.auto_delete = a.auto_delete;
  spec.arguments = to_fields(a.arguments);
  answer_handler done;
  if (!a.no_wait)
    done = [this, id](request_answer& answer) {
      const auto& info = answer_as<queue_info>(answer);
      auto w = method_payload(queue_declare_ok);
      w.short_string(info.spec.name);
      w.long_uint(static_cast<uint32_t>(info.ready));
      w.long_uint(info.consumers);
      send_method(id, std::move(w));
    };
  request(id, m, std::move(done),
          [&](uint64_t q) { conn_.declare_queue(q, id, std::move(spec), a.passive); });
}

void session::on_queue_purge_or_delete(uint16_t id, channel&, method_id m, reader& r) {
  auto a = m == queue_purge ? args::read_queue_purge(r) : args::read_queue_delete(r);
  answer_handler done;
  auto ok = m == queue_purge ? queue_purge_ok : queue_delete_ok;
  if (!a.no_wait)
    done = [this, id, ok](request_answer& answer) {
      auto w = method_payload(ok);
      w.long_uint(answer_as<uint32_t>(answer));
      send_method(id, std::move(w));
    };
  request(id, m, std::move(done), [&](uint64_t q) {
    if (m == queue_purge)
      conn_.purge(q, id, std::move(a.name));
    else
      conn_.delete_queue(q, id, std::move(a.name), a.if_unused, a.if_empty);
  });
}

void session::on_basic_qos(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_qos(r);
  if (a.prefetch_size != 0)
    return channel_error(id, reply_code::not_implemented,
                         "basic.qos prefetch_size is not supported; use prefetch_count", m);
  // RabbitMQ's meaning of global: the channel's limit, not the connection's.
  request(id, m, answer_with(id, basic_qos_ok, false),
          [&](uint64_t q) { conn_.qos(q, id, a.prefetch_count, a.global); });
}

void session::on_basic_consume(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_consume(r);
  consume_request c;
  c.queue = std::move(a.queue);
  c.tag = std::move(a.tag);
  c.no_ack = a.no_ack;
  c.exclusive = a.exclusive;
  auto fields = to_fields(a.arguments);
  auto problem = parse_consumer_arguments(fields, c.priority);
  if (problem.empty()) problem = parse_stream_arguments(fields, c.offset, c.group);
  if (!problem.empty()) return channel_error(id, reply_code::precondition_failed, problem, m);
  answer_handler done = [this, id, no_wait = a.no_wait](request_answer& answer) {
    if (no_wait) return;
    auto w = method_payload(basic_consume_ok);
    w.short_string(answer_as<std::string>(answer));
    send_method(id, std::move(w));
  };
  request(id, m, std::move(done), [&](uint64_t q) { conn_.consume(q, id, std::move(c)); });
}

void session::on_basic_cancel(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_cancel(r);
  answer_handler done;
  if (!a.no_wait)
    done = [this, id, tag = a.tag](request_answer&) {
      auto w = method_payload(basic_cancel_ok);
      w.short_string(tag);
      send_method(id, std::move(w));
    };
  request(id, m, std::move(done), [&](uint64_t q) { conn_.cancel(q, id, a.tag, false); });
}

void session::on_basic_get(uint16_t id, channel&, method_id m, reader& r) {
  auto a = args::read_get(r);
  auto answer = [this, id](request_answer& got) {
    if (std::holds_alternative<std::monostate>(got)) {
      auto w = method_payload(basic_get_empty);
      w.short_string("");
      return send_method(id, std::move(w));
    }
    const auto& d = answer_as<delivery>(got);
    auto w = method_payload(basic_get_ok);
    w.longlong_uint(d.tag);
    w.bits({d.redelivered});
    w.short_string(d.msg->exchange);
    w.short_string(d.msg->routing_key);
    w.long_uint(d.message_count);
    send_content(id, w.bytes(), d.msg);
  };
  request(id, m, std::move(answer),
          [&](uint64_t q) { conn_.get(q, id, std::move(a.queue), a.no_ack); });
}

void session::on_basic_recover(uint16_t id, channel&, method_id m, reader& r) {
  args::read_flag(r);  // requeue: unacked messages always go back to their queues
  answer_handler done;
  if (m == basic_recover) done = answer_with(id, basic_recover_ok, false);
  request(id, m, std::move(done), [&](uint64_t q) { conn_.recover(q, id); });
}

void session::on_confirm_select(uint16_t id, channel& ch, method_id m, reader& r) {
  bool no_wait = args::read_flag(r).value;
  if (ch.tx)
    return channel_error(id, reply_code::precondition_failed,
                         "cannot switch from tx to confirm mode", m);
  if (!ch.confirm) {
    ch.confirm = true;
    ch.next_confirm_tag = 0;
  }
  request(id, m, answer_with(id, confirm_select_ok, no_wait),
          [&](uint64_t q) { conn_.confirm_select(q, id); });
}

// --- answers and events from the connection actor -------------------------------------------

void session::consumer_cancelled(uint16_t id, const std::string& tag) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.settling()) return;
  auto w = method_payload(basic_cancel);
  w.short_string(tag);
  w.bits({true});  // no-wait: the client does not answer a server-sent cancel
  send_method(id, std::move(w));
}

}  // namespace warren::amqp
