// session: publishes (gathered per read, one batch per channel), confirms in tag order, returns,
// single acks as one ackEach, and deliveries.
#include "net/amqp/session.hpp"

#include "net/amqp/properties.hpp"

#include <caf/send.hpp>

#include <algorithm>

namespace warren::amqp {

void session::on_content(const frame_view& f) {
  auto c = channels_.find(f.channel);
  // Content of a publish on a closing channel (whose method was discarded, or whose header was
  // refused) is discarded with it.
  if (c != channels_.end() && c->second.settling()) return;
  if (c == channels_.end() || !c->second.publish)
    throw protocol_error(
        reply_code::unexpected_frame,
        std::string(f.type == frame_type::header ? "content header" : "content body") +
            " frame on channel " + std::to_string(f.channel) +
            " without a basic.publish before it");
  auto& ch = c->second;
  current_method_ = basic_publish;
  auto& p = *ch.publish;
  if (f.type == frame_type::header) {
    if (p.have_header)
      throw protocol_error(
          reply_code::unexpected_frame,
          "a second content header for one publish on channel " + std::to_string(f.channel));
    auto h = parse_content_header(f.payload);
    if (h.class_id != 60)
      throw protocol_error(
          reply_code::command_invalid,
          "content header of class " + std::to_string(h.class_id) + " for basic.publish");
    p.have_header = true;
    p.body_size = h.body_size;
    p.properties = std::move(h.properties);
    if (auto max = config_.limits.max_message_bytes; p.body_size > max) {
      ch.publish.reset();
      return channel_error(f.channel, reply_code::precondition_failed,
                           "message size " + std::to_string(h.body_size) +
                               " is larger than the maximum of " + std::to_string(max),
                           basic_publish);
    }
    p.body.reserve(p.body_size);
  } else {
    if (!p.have_header)
      throw protocol_error(
          reply_code::unexpected_frame,
          "content body before its header on channel " + std::to_string(f.channel));
    if (p.body.size() + f.payload.size() > p.body_size)
      throw protocol_error(reply_code::frame_error, "content body longer than the " +
                                                        std::to_string(p.body_size) +
                                                        " bytes its header announced");
    p.body += f.payload;
  }
  if (p.have_header && p.body.size() == p.body_size) complete_publish(f.channel, ch);
}

void session::complete_publish(uint16_t id, channel& ch) {
  auto p = std::move(*ch.publish);
  ch.publish.reset();
  message_properties props;
  try {
    props = to_message_properties(p.properties);
  } catch (const protocol_error& e) {
    return channel_error(id, reply_code::precondition_failed, e.what(), basic_publish);
  }
  auto m = std::make_shared<message>();
  m->id = next_message_id();
  m->exchange = std::move(p.exchange);
  m->routing_key = std::move(p.routing_key);
  m->mandatory = p.mandatory;
  m->body = std::move(p.body);
  m->set_properties(std::move(props));
  if (ch.tx) {
    // Held until tx.commit: bounded, so that a transaction never committed cannot hold the
    // node's memory.
    auto cost = m->body.size() + m->heap_bytes() + message_overhead_bytes;
    if (ch.tx_publishes.size() >= max_tx_messages || ch.tx_bytes + cost > max_tx_bytes)
      return channel_error(id, reply_code::precondition_failed,
                           "a transaction holds at most " + std::to_string(max_tx_messages) +
                               " messages and " + std::to_string(max_tx_bytes >> 20) +
                               " MiB uncommitted; commit sooner",
                           basic_publish);
    ch.tx_bytes += cost;
    ch.tx_publishes.push_back(std::move(m));  // sent at tx.commit
    recount_tx(ch);
    return;
  }
  ch.gathered.push_back(std::move(m));
  if (ch.gathered.size() >= max_publish_batch) send_publishes(id, ch);
}

void session::flush_channels() {
  for (auto& [id, ch] : channels_) {
    if (ch.settling()) continue;
    send_publishes(id, ch);
    send_acks(id, ch);
  }
  flush_output();
}

void session::send_publishes(uint16_t id, channel& ch,
                             std::function<void(const std::vector<publish_outcome>&)> after) {
  if (ch.gathered.empty()) return;
  auto msgs = std::move(ch.gathered);
  ch.gathered.clear();
  auto call = std::make_shared<publish_call>();
  call->count = msgs.size();
  for (size_t i = 0; i < msgs.size(); ++i)
    if (msgs[i]->mandatory) call->mandatory.emplace_back(i, msgs[i]);
  if (ch.confirm) {
    call->first_tag = ch.next_confirm_tag + 1;
    ch.next_confirm_tag += call->count;
    ch.calls.emplace(call->first_tag, call);
  }
  unanswered_ += call->count;
  ++ch.publishes_in_flight;
  request(
      id, basic_publish,
      [this, id, call, after = std::move(after)](request_answer& answer) {
        call->outcomes = std::move(answer_as<std::vector<publish_outcome>>(answer));
        call->answered = true;
        published_answered(id, *call);
        if (after) after(call->outcomes);
      },
      [&](uint64_t r) { conn_.publish(r, id, std::move(msgs)); }, call->count);
}

void session::published_answered(uint16_t id, publish_call& call) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.settling()) return;
  for (const auto& [i, msg] : call.mandatory)
    if (i < call.outcomes.size() && call.outcomes[i] == publish_outcome::returned)
      send_return(id, msg);
  if (call.first_tag != 0) send_confirms(id, c->second);
  flush_output();
}

void session::send_confirms(uint16_t id, channel& ch) {
  uint64_t multi_upto = 0;
  auto flush_multi = [&] {
    if (multi_upto == 0) return;
    send_ack_or_nack(id, basic_ack, multi_upto, true);
    multi_upto = 0;
  };
  while (!ch.calls.empty() && ch.calls.begin()->second->answered) {
    auto call = ch.calls.begin()->second;
    ch.calls.erase(ch.calls.begin());
    for (size_t i = 0; i < call->count; ++i) {
      uint64_t tag = call->first_tag + i;
      bool nack = i < call->outcomes.size() && call->outcomes[i] == publish_outcome::rejected;
      if (!nack) {
        multi_upto = tag;
        continue;
      }
      flush_multi();
      send_ack_or_nack(id, basic_nack, tag, false);
    }
  }
  flush_multi();
}

void session::send_ack_or_nack(uint16_t id, method_id which, uint64_t tag, bool multiple) {
  auto w = method_payload(which);
  w.longlong_uint(tag);
  w.bits(which == basic_nack ? std::vector<bool>{multiple, false} : std::vector<bool>{multiple});
  send_method(id, std::move(w));
}

void session::send_return(uint16_t id, const message_ptr& m) {
  auto w = method_payload(basic_return);
  w.short_uint(static_cast<uint16_t>(reply_code::no_route));
  w.short_string("NO_ROUTE");
  w.short_string(m->exchange);
  w.short_string(m->routing_key);
  send_content(id, w.bytes(), m);
}

void session::send_acks(uint16_t id, channel& ch) {
  if (ch.acks.empty()) return;
  auto tags = std::move(ch.acks);
  ch.acks.clear();
  request(id, basic_ack, nullptr, [&](uint64_t r) { conn_.ack_each(r, id, std::move(tags)); });
}

namespace {

// A stream's message goes out with its offset in the x-stream-offset header (a long), as
// RabbitMQ's streams send it over AMQP 0-9-1.
message_ptr with_stream_offset(const message_ptr& m, int64_t offset) {
  auto copy = std::make_shared<message>(*m);
  auto props = m->properties();
  auto value = field_value::of_int(offset);
  value.amqp_type = 'l';
  auto old = std::find_if(props.headers.begin(), props.headers.end(),
                          [](const field& f) { return f.key == "x-stream-offset"; });
  if (old != props.headers.end())
    old->value = value;
  else
    props.headers.push_back({"x-stream-offset", value});
  copy->set_properties(std::move(props));
  return copy;
}

}  // namespace

void session::deliver(uint16_t id, const std::string& tag, std::vector<delivery> batch) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.settling() || phase_ != phase::running) return;
  for (const auto& d : batch) {
    auto w = method_payload(basic_deliver);
    w.short_string(tag);
    w.longlong_uint(d.tag);
    w.bits({d.redelivered});
    w.short_string(d.msg->exchange);
    w.short_string(d.msg->routing_key);
    send_content(id, w.bytes(),
                 d.stream_offset >= 0 ? with_stream_offset(d.msg, d.stream_offset) : d.msg);
  }
  unflushed_.emplace_back(id, tag, static_cast<uint32_t>(batch.size()));
}

}  // namespace warren::amqp
