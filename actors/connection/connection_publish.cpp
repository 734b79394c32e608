// Publishing for the connection actor (see connection_parts.hpp): publish calls wait in their
// channel's backlog until every exchange they name is known, are routed in order, and are
// answered once every queue has confirmed (or refused) each message.
#include "actors/connection/connection_parts.hpp"

#include "actors/queue/queue_arguments.hpp"
#include "core/clock.hpp"
#include "core/latency_histogram.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>

namespace warren::connection_parts {

namespace {

// Answers the publish calls whose messages all have an outcome now.
void send_answers(self_ptr self, channel_state& ch) {
  auto answers = ch.confirms.take_answers();
  if (answers.empty()) return;
  auto now = steady_ns();
  for (auto& a : answers) {
    publish_confirm_latency().observe(now - a.started_ns, a.outcomes.size());
    self->state.link->reply(a.request, {}, make_answer(std::move(a.outcomes)));
  }
}

void route_run(self_ptr self, uint16_t id, const publish_confirms::call_ref& call,
               const caf::actor& exchange, std::vector<message_ptr>& msgs, size_t first,
               size_t last) {
  auto& ch = self->state.channels[id];
  auto serial = ch.serial;
  publish_batch batch{self_handle(self), id, {}};
  batch.items.reserve(last - first);
  std::vector<uint64_t> seqs;
  for (size_t i = first; i < last; ++i) {
    auto seq = ch.confirms.add(call, i, msgs[i]->mandatory);
    batch.items.push_back({msgs[i], seq});
    seqs.push_back(seq);
  }
  self->request(exchange, caf::infinite, publish_atom::value, std::move(batch))
      .then(
          [=](std::vector<uint32_t>& counts) {
            auto* c = same_channel(self, id, serial);
            if (c == nullptr) return;
            for (size_t k = 0; k < seqs.size() && k < counts.size(); ++k)
              c->confirms.routed(seqs[k], counts[k]);
            send_answers(self, *c);
          },
          [=](caf::error& err) {
            log(log_level::debug, "connection",
                "routing failed: " + to_string(describe(err)) + " / " + caf::to_string(err));
            // The exchange went away before routing: nobody took these messages.
            auto* c = same_channel(self, id, serial);
            if (c == nullptr) return;
            for (auto seq : seqs) c->confirms.route_failed(seq);
            send_answers(self, *c);
          });
}

// What is wrong with a publish call's messages, or empty. Checked before anything is routed so
// a bad message in a batch leaves the whole batch unpublished.
std::string check_publish(const std::vector<message_ptr>& msgs, uint64_t max_bytes) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    const auto& m = *msgs[i];
    std::string problem;
    if (m.body.size() > max_bytes)
      problem = "message size " + std::to_string(m.body.size()) +
                " is larger than the maximum of " + std::to_string(max_bytes);
    if (problem.empty() && !m.exchange.empty()) problem = check_name("exchange name", m.exchange);
    if (problem.empty()) problem = check_key("routing key", m.routing_key);
    if (problem.empty() && !m.properties().headers.empty())
      problem = check_field_depth("message headers", m.properties().headers);
    if (problem.empty()) {
      std::optional<int64_t> ttl;
      problem = parse_expiration(m.properties().expiration, ttl);
    }
    if (!problem.empty())
      return msgs.size() == 1 ? problem
                              : "message " + std::to_string(i) + " of the batch: " + problem;
  }
  return {};
}

// Looks up exchanges the cache does not know, then carries on with the backlog.
void resolve_exchanges(self_ptr self, uint16_t id, std::vector<std::string> names) {
  auto& ch = self->state.channels[id];
  ch.resolving = true;
  auto serial = ch.serial;
  auto left = std::make_shared<size_t>(names.size());
  auto missing = std::make_shared<std::vector<caf::error>>();
  for (const auto& name : names) {
    self->request(vhost_handle(self->state.vhost), caf::infinite, find_atom::value,
                  exchanges_atom::value, name)
        .then(
            [=](caf::actor& exchange, bool internal) {
              self->monitor(exchange);
              self->state.exchanges[name] = {exchange, internal};
              if (--*left == 0) {
                if (auto* c = same_channel(self, id, serial)) c->resolving = false;
                drain_publishes(self, id);
              }
            },
            [=](caf::error& err) {
              missing->push_back(err);
              if (--*left == 0) {
                auto* c = same_channel(self, id, serial);
                if (c == nullptr) {           // closed meanwhile: its waiting calls were answered
                  drain_publishes(self, id);  // a connection close may wait on it
                  return;
                }
                c->resolving = false;
                // Fail the first waiting call (it names a missing exchange): a channel error.
                if (!c->publish_backlog.empty()) {
                  auto request = c->publish_backlog.front().request;
                  c->publish_backlog.pop_front();
                  fail(self, request, id, missing->front());
                }
                drain_publishes(self, id);
              }
            });
  }
}

}  // namespace

void drain_publishes(self_ptr self, uint16_t id) {
  auto& st = self->state;
  auto c = st.channels.find(id);
  if (c == st.channels.end()) return;
  auto& ch = c->second;
  while (ch.open && !ch.resolving && ch.topology_in_flight == 0 && !st.blocked &&
         !ch.publish_backlog.empty()) {
    auto& front = ch.publish_backlog.front();
    std::vector<std::string> unknown;
    for (const auto& m : front.msgs)
      if (st.exchanges.count(m->exchange) == 0 &&
          std::find(unknown.begin(), unknown.end(), m->exchange) == unknown.end())
        unknown.push_back(m->exchange);
    if (!unknown.empty()) {
      resolve_exchanges(self, id, std::move(unknown));
      return;
    }
    auto call_req = std::move(front);
    ch.publish_backlog.pop_front();
    for (const auto& m : call_req.msgs) {
      if (st.exchanges[m->exchange].internal) {
        fail(self, call_req.request, id,
             make_broker_error(reply_code::access_refused, "cannot publish to internal exchange " +
                                                               quote(m->exchange) + " in vhost " +
                                                               quote(st.hello.vhost)));
        closes_after_publishes(self, id);
        return;
      }
    }
    if (call_req.msgs.empty()) {
      st.link->reply(call_req.request, {}, make_answer(std::vector<publish_outcome>{}));
      continue;
    }
    auto call = ch.confirms.start(call_req.request, call_req.msgs.size());
    // One batch per run of messages for the same exchange keeps per-exchange order.
    size_t first = 0;
    auto& msgs = call_req.msgs;
    for (size_t i = 1; i <= msgs.size(); ++i) {
      if (i == msgs.size() || msgs[i]->exchange != msgs[first]->exchange) {
        route_run(self, id, call, st.exchanges[msgs[first]->exchange].actor, msgs, first, i);
        first = i;
      }
    }
  }
  closes_after_publishes(self, id);
}

void closes_after_publishes(self_ptr self, uint16_t id) {
  auto& st = self->state;
  auto c = st.channels.find(id);
  if (c != st.channels.end() && !c->second.publishes_waiting() && c->second.close_after_publishes) {
    // close_channel answers the waiting close itself, after failing unconfirmed publishes.
    close_channel(self, id, {reply_code::channel_error, "closed by the client"});
    st.channels.erase(id);
  }
  if (!st.close_after_publishes) return;
  if (std::any_of(st.channels.begin(), st.channels.end(),
                  [](const auto& ch) { return ch.second.open && ch.second.publishes_waiting(); }))
    return;
  auto request = *st.close_after_publishes;
  st.close_after_publishes.reset();
  close_connection(self);
  if (request != 0) st.link->reply(request, {}, {});
}

uint64_t topology_started(self_ptr self, uint16_t id) {
  auto& ch = self->state.channels[id];
  ++ch.topology_in_flight;
  return ch.serial;
}

void topology_settled(self_ptr self, uint16_t id, uint64_t serial) {
  if (auto* c = same_channel(self, id, serial)) --c->topology_in_flight;
  drain_publishes(self, id);
}

void publish(self_ptr self, uint64_t request, uint16_t id, std::vector<message_ptr>& msgs) {
  auto* ch = open_channel(self, request, id);
  if (ch == nullptr) return;
  if (auto problem = check_publish(msgs, self->state.max_message_bytes); !problem.empty()) {
    fail(self, request, id, make_broker_error(reply_code::precondition_failed, problem));
    return;
  }
  for (const auto& m : msgs)
    if (!allowed(self, request, id, access_kind::write, "exchange", m->exchange)) return;
  for (const auto& m : msgs) self->state.traffic.count_in(m->body.size());
  ch->publish_backlog.push_back({request, std::move(msgs)});
  drain_publishes(self, id);
}

void set_blocked(self_ptr self, bool blocked) {
  // While the alarm lasts, publish calls wait in their backlog and are answered (which is the
  // publisher's credit) once it clears.
  self->state.blocked = blocked;
  if (blocked) return;
  std::vector<uint16_t> ids;
  for (const auto& [id, ch] : self->state.channels) ids.push_back(id);
  for (auto id : ids) drain_publishes(self, id);
}

void member_down(self_ptr self) {
  for (auto& [id, ch] : self->state.channels) {
    if (!ch.open) continue;
    ch.confirms.refuse_waiting();
    send_answers(self, ch);
  }
}

void confirm(self_ptr self, uint16_t id, const std::vector<uint64_t>& acked,
             const std::vector<uint64_t>& nacked) {
  auto c = self->state.channels.find(id);
  if (c == self->state.channels.end() || !c->second.open) return;
  auto& ch = c->second;
  for (auto seq : acked) ch.confirms.acked(seq);
  for (auto seq : nacked) ch.confirms.nacked(seq);
  send_answers(self, ch);
}

}  // namespace warren::connection_parts
