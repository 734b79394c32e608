#include "actors/connection_actor.hpp"

#include "actors/actor_defaults.hpp"

#include "actors/queue_arguments.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <utility>

namespace warren {

namespace {

using self_ptr = caf::stateful_actor<connection_state>*;

caf::actor self_handle(self_ptr self) {
  return caf::actor_cast<caf::actor>(self);
}

void touch_queue(channel_state& ch, const caf::actor& queue) {
  if (std::find(ch.queues_touched.begin(), ch.queues_touched.end(), queue) ==
      ch.queues_touched.end())
    ch.queues_touched.push_back(queue);
}

// Closes a channel: its queues requeue what it held and drop its consumers; outstanding
// publish calls fail. The channel stays as a tombstone so later calls get a clear error.
void close_channel(self_ptr self, uint16_t id, broker_failure reason) {
  auto& st = self->state;
  auto i = st.channels.find(id);
  if (i == st.channels.end() || !i->second.open) return;
  auto& ch = i->second;
  for (const auto& q : ch.queues_touched) self->send(q, close_atom::value, self_handle(self), id);
  std::vector<std::shared_ptr<channel_state::publish_call>> calls;
  for (auto& [seq, p] : ch.pending)
    if (std::find(calls.begin(), calls.end(), p.call) == calls.end()) calls.push_back(p.call);
  auto closed = make_broker_error(
      reply_code::channel_error, "channel " + std::to_string(id) + " closed: " + to_string(reason));
  for (const auto& call : calls) st.link->reply(call->request, closed, {});
  for (const auto& q : ch.publish_backlog) st.link->reply(q.request, closed, {});
  // A close from the client that waited for those publishes is answered now: its channel is
  // gone, whichever side closed it first.
  auto client_close = ch.close_after_publishes;
  channel_state tombstone;
  tombstone.open = false;
  tombstone.serial = ch.serial;
  tombstone.closed_because = std::move(reason);
  ch = std::move(tombstone);
  if (client_close && *client_close != 0) st.link->reply(*client_close, {}, {});
}

// Answers a failed request. A channel error also closes the channel (AMQP rules); other
// errors close the whole connection.
void fail(self_ptr self, uint64_t request, uint16_t channel, const caf::error& err) {
  auto failure = describe(err);
  self->state.link->reply(request, err, {});
  auto ch = self->state.channels.find(channel);
  if (is_channel_error(failure.code) && ch != self->state.channels.end() && ch->second.open) {
    close_channel(self, channel, failure);
    self->state.link->channel_closed(channel, ch->second.serial, failure);
  }
}

// Whether the user may do `kind` to `name`; if not, the request fails with ACCESS_REFUSED (a
// channel error).
bool allowed(self_ptr self, uint64_t request, uint16_t channel, access_kind kind,
             const char* resource, const std::string& name) {
  auto refused = self->state.rights.check(kind, resource, name);
  if (refused.empty()) return true;
  fail(self, request, channel, make_broker_error(reply_code::access_refused, refused));
  return false;
}

// A binding needs write on its destination and read on its source exchange.
bool binding_allowed(self_ptr self, uint64_t request, uint16_t channel, const binding_spec& b) {
  return allowed(self, request, channel, access_kind::write, b.to_exchange ? "exchange" : "queue",
                 b.destination) &&
         allowed(self, request, channel, access_kind::read, "exchange", b.exchange);
}

// The channel for a request, or nullptr after answering with CHANNEL_ERROR.
// The channel an answer that arrives later belongs to: open, and the same opening of that number
// (`serial`), not one the client closed and opened again meanwhile; else nullptr.
channel_state* same_channel(self_ptr self, uint16_t id, uint64_t serial) {
  auto i = self->state.channels.find(id);
  if (i == self->state.channels.end() || !i->second.open || i->second.serial != serial)
    return nullptr;
  return &i->second;
}

channel_state* open_channel(self_ptr self, uint64_t request, uint16_t id) {
  auto& st = self->state;
  auto i = st.channels.find(id);
  if (i == st.channels.end()) {
    st.link->reply(request,
                   make_broker_error(reply_code::channel_error,
                                     "channel " + std::to_string(id) + " is not open"),
                   {});
    return nullptr;
  }
  if (!i->second.open) {
    st.link->reply(
        request,
        make_broker_error(reply_code::channel_error,
                          "channel " + std::to_string(id) +
                              " is closed after an error: " + to_string(i->second.closed_because)),
        {});
    return nullptr;
  }
  return &i->second;
}

// Answers a request whose channel closed while it was being carried out.
void reply_channel_gone(self_ptr self, uint64_t request, uint16_t id) {
  self->state.link->reply(
      request,
      make_broker_error(reply_code::channel_error, "channel " + std::to_string(id) + " was closed"),
      {});
}

// Sends a request and relays the typed answer (or the error) to the front door.
template <class... Ts, class Dest, class... Args>
void relay(self_ptr self, uint64_t request, uint16_t channel, const Dest& dest, Args&&... args) {
  self->request(dest, caf::infinite, std::forward<Args>(args)...)
      .then(
          [=](Ts&... xs) {
            self->state.link->reply(request, {}, caf::make_message(std::move(xs)...));
          },
          [=](caf::error& err) { fail(self, request, channel, err); });
}

void finish_publish(self_ptr self, channel_state& ch, uint64_t seq) {
  auto i = ch.pending.find(seq);
  if (i == ch.pending.end()) return;
  auto& p = i->second;
  if (p.routed_to < 0 || p.acked + p.nacked < p.routed_to) return;
  publish_outcome outcome = publish_outcome::routed;
  if (p.routed_to == 0)
    outcome = p.mandatory ? publish_outcome::returned : publish_outcome::dropped;
  else if (p.nacked > 0)
    outcome = publish_outcome::rejected;
  auto call = p.call;
  call->outcomes[p.index] = outcome;
  ch.pending.erase(i);
  if (--call->remaining == 0)
    self->state.link->reply(call->request, {}, caf::make_message(std::move(call->outcomes)));
}

void route_run(self_ptr self, uint16_t id, const std::shared_ptr<channel_state::publish_call>& call,
               const caf::actor& exchange, std::vector<message_ptr>& msgs, size_t first,
               size_t last) {
  auto& ch = self->state.channels[id];
  auto serial = ch.serial;
  publish_batch batch{self_handle(self), id, {}};
  batch.items.reserve(last - first);
  std::vector<uint64_t> seqs;
  for (size_t i = first; i < last; ++i) {
    auto seq = ++ch.next_publish_seq;
    ch.pending.emplace(seq, channel_state::pending_publish{call, i, -1, 0, 0, msgs[i]->mandatory});
    batch.items.push_back({msgs[i], seq});
    seqs.push_back(seq);
  }
  self->request(exchange, caf::infinite, publish_atom::value, std::move(batch))
      .then(
          [=](std::vector<uint32_t>& counts) {
            auto* c = same_channel(self, id, serial);
            if (c == nullptr) return;
            for (size_t k = 0; k < seqs.size() && k < counts.size(); ++k) {
              auto p = c->pending.find(seqs[k]);
              if (p == c->pending.end()) continue;
              p->second.routed_to = counts[k];
              finish_publish(self, *c, seqs[k]);
            }
          },
          [=](caf::error& err) {
            log(log_level::debug, "connection",
                "routing failed: " + to_string(describe(err)) + " / " + caf::to_string(err));
            // The exchange went away before routing: nobody took these messages.
            auto* c = same_channel(self, id, serial);
            if (c == nullptr) return;
            for (auto seq : seqs) {
              auto p = c->pending.find(seq);
              if (p == c->pending.end()) continue;
              p->second.routed_to = 1;
              p->second.nacked = 1;
              finish_publish(self, *c, seq);
            }
          });
}

void drain_publishes(self_ptr self, uint16_t id);
void closes_after_publishes(self_ptr self, uint16_t id);
void close_connection(self_ptr self);

// Looks up exchanges the cache does not know, then carries on with the backlog.
void resolve_exchanges(self_ptr self, uint16_t id, std::vector<std::string> names) {
  auto& ch = self->state.channels[id];
  ch.resolving = true;
  auto serial = ch.serial;
  auto left = std::make_shared<size_t>(names.size());
  auto missing = std::make_shared<std::vector<caf::error>>();
  for (const auto& name : names) {
    self->request(self->state.vhost, caf::infinite, find_atom::value, exchanges_atom::value, name)
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

// Routes waiting publish calls in order, as long as every exchange they name is known.
void drain_publishes(self_ptr self, uint16_t id) {
  auto& st = self->state;
  auto c = st.channels.find(id);
  if (c == st.channels.end()) return;
  auto& ch = c->second;
  while (ch.open && !ch.resolving && !st.blocked && !ch.publish_backlog.empty()) {
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
    auto call = std::make_shared<channel_state::publish_call>(channel_state::publish_call{
        call_req.request, std::vector<publish_outcome>(call_req.msgs.size()),
        call_req.msgs.size()});
    if (call_req.msgs.empty()) {
      st.link->reply(call->request, {}, caf::make_message(std::vector<publish_outcome>{}));
      continue;
    }
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

// Carries out a channel or connection close that waited for exchange lookups of publishes
// accepted before it.
void closes_after_publishes(self_ptr self, uint16_t id) {
  auto& st = self->state;
  auto c = st.channels.find(id);
  if (c != st.channels.end() && !c->second.resolving && c->second.close_after_publishes) {
    auto request = *c->second.close_after_publishes;
    close_channel(self, id, {reply_code::channel_error, "closed by the client"});
    st.channels.erase(id);
    if (request != 0) st.link->reply(request, {}, {});
  }
  if (!st.close_after_publishes) return;
  if (std::any_of(st.channels.begin(), st.channels.end(),
                  [](const auto& ch) { return ch.second.open && ch.second.resolving; }))
    return;
  auto request = *st.close_after_publishes;
  st.close_after_publishes.reset();
  close_connection(self);
  if (request != 0) st.link->reply(request, {}, {});
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

void grant_credit(self_ptr self, uint16_t id, channel_state& ch, const std::string& tag,
                  uint32_t n) {
  auto c = ch.consumers.find(tag);
  if (c == ch.consumers.end() || n == 0) return;
  if (!c->second.queue) {
    c->second.unsent_credit += n;  // sent once the queue has taken the consumer
    return;
  }
  self->send(c->second.queue, credit_atom::value, self_handle(self), id, tag, n);
}

void grant_all(self_ptr self, uint16_t id, channel_state& ch, const channel_credit::grants& g) {
  for (const auto& [tag, n] : g) grant_credit(self, id, ch, tag, n);
}

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

// Settles deliveries already taken out of the channel's unacked map with `kind`: one message
// per queue, and the credit their consumers earned back.
void settle_entries(self_ptr self, uint16_t id, channel_state& ch,
                    std::vector<channel_state::unacked_entry> taken, settle_kind kind) {
  std::map<caf::actor, std::vector<uint64_t>> by_queue;
  std::map<std::string, uint32_t> by_consumer;
  for (const auto& e : taken) {
    by_queue[e.queue].push_back(e.delivery_id);
    if (!e.consumer_tag.empty()) ++by_consumer[e.consumer_tag];
  }
  if (kind == settle_kind::ack) self->state.traffic.acked += taken.size();
  for (auto& [queue, ids] : by_queue)
    self->send(queue, settle_atom::value, self_handle(self), std::move(ids), kind);
  for (const auto& [consumer, n] : by_consumer)
    grant_all(self, id, ch, ch.credit.settled(consumer, n));
}

// Settles tag (or everything up to it) with `kind`; false when the tag is not outstanding.
bool settle(self_ptr self, uint16_t id, channel_state& ch, uint64_t tag, bool multiple,
            settle_kind kind) {
  std::vector<channel_state::unacked_entry> taken;
  if (multiple) {
    auto end = tag == 0 ? ch.unacked.end() : ch.unacked.upper_bound(tag);
    if (ch.unacked.begin() == end && tag != 0) return false;
    for (auto i = ch.unacked.begin(); i != end; ++i) taken.push_back(std::move(i->second));
    ch.unacked.erase(ch.unacked.begin(), end);
  } else {
    auto i = ch.unacked.find(tag);
    if (i == ch.unacked.end()) return false;
    taken.push_back(std::move(ch.unacked.extract(i).mapped()));
  }
  settle_entries(self, id, ch, std::move(taken), kind);
  return true;
}

// Acks each tag; returns the first tag that is not outstanding, if any, having acked the ones
// before it. A tag twice in one list is unknown the second time: the first took it out.
std::optional<uint64_t> ack_each(self_ptr self, uint16_t id, channel_state& ch,
                                 const std::vector<uint64_t>& tags) {
  std::vector<channel_state::unacked_entry> taken;
  taken.reserve(tags.size());
  std::optional<uint64_t> unknown;
  for (auto tag : tags) {
    auto i = ch.unacked.find(tag);
    if (i == ch.unacked.end()) {
      unknown = tag;
      break;
    }
    taken.push_back(std::move(ch.unacked.extract(i).mapped()));
  }
  settle_entries(self, id, ch, std::move(taken), settle_kind::ack);
  return unknown;
}

int64_t steady_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Arms the consumer-timeout timer for the oldest unacked delivery of the connection, if any.
void watch_timeout(self_ptr self) {
  auto& st = self->state;
  if (st.consumer_timeout_ms == 0 || st.timeout_check_scheduled) return;
  std::optional<int64_t> oldest;
  for (const auto& [id, ch] : st.channels)
    if (ch.open && !ch.unacked.empty())  // tags grow with time: the first is the oldest
      oldest = std::min(oldest.value_or(INT64_MAX), ch.unacked.begin()->second.delivered_ms);
  if (!oldest) return;
  st.timeout_check_scheduled = true;
  auto delay = std::max<int64_t>(*oldest + st.consumer_timeout_ms - steady_ms(), 1);
  self->delayed_send(self, std::chrono::milliseconds(delay), timeout_atom::value);
}

// Closes every channel holding a delivery unacked for longer than the consumer timeout, as
// RabbitMQ does: 406 PRECONDITION_FAILED, and its unacked messages go back to their queues.
void check_timeouts(self_ptr self) {
  auto& st = self->state;
  st.timeout_check_scheduled = false;
  auto now = steady_ms();
  for (auto& [id, ch] : st.channels) {
    if (!ch.open || ch.unacked.empty() ||
        now - ch.unacked.begin()->second.delivered_ms < st.consumer_timeout_ms)
      continue;
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

// Hands a queue's deliveries to the front door with this channel's delivery tags.
void forward_deliveries(self_ptr self, uint16_t id, channel_state& ch, const std::string& tag,
                        bool no_ack, const caf::actor& queue, std::vector<queued_delivery>& batch) {
  std::vector<delivery> out;
  out.reserve(batch.size());
  if (!no_ack) ch.credit.delivered(tag, static_cast<uint32_t>(batch.size()));
  for (auto& d : batch) {
    auto tag_no = ++ch.next_delivery_tag;
    if (!no_ack)
      ch.unacked.emplace(tag_no,
                         channel_state::unacked_entry{queue, d.delivery_id, tag, steady_ms()});
    self->state.traffic.count_out(d.msg->body.size(), d.redelivered);
    out.push_back({tag_no, d.redelivered, std::move(d.msg), 0});
  }
  self->state.link->deliver(id, tag, std::move(out));
  if (!no_ack) watch_timeout(self);
}

void close_connection(self_ptr self) {
  auto& st = self->state;
  if (st.closed) return;
  st.closed = true;
  std::vector<uint16_t> ids;
  for (const auto& [id, ch] : st.channels) ids.push_back(id);
  for (auto id : ids) close_channel(self, id, {reply_code::connection_forced, "connection closed"});
  // CAF 0.17 keeps a monitor in the watched actor until that actor ends, and the monitor's
  // address keeps this actor's memory: the vhost and exchanges outlive every connection.
  if (st.vhost) self->demonitor(st.vhost);
  for (const auto& [name, e] : st.exchanges) self->demonitor(e.actor);
  self->quit();
}

}  // namespace

caf::behavior connection_actor(caf::stateful_actor<connection_state>* self, caf::actor node,
                               std::shared_ptr<client_link> link, client_hello hello) {
  install_actor_defaults(self, "connection");
  auto& st = self->state;
  st.node = std::move(node);
  st.link = std::move(link);
  st.hello = std::move(hello);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.vhost && dm.source == st.vhost.address()) {
      st.link->connection_closed(
          {reply_code::connection_forced, "vhost " + quote(st.hello.vhost) + " was deleted"});
      close_connection(self);
      return;
    }
    for (auto i = st.exchanges.begin(); i != st.exchanges.end();)
      i = i->second.actor.address() == dm.source ? st.exchanges.erase(i) : std::next(i);
  });
  return {
      // --- connection ------------------------------------------------------------------------
      [=](open_atom, uint64_t request) {
        self->request(self->state.node, caf::infinite, connect_atom::value, self->state.hello,
                      self_handle(self))
            .then(
                [=](caf::actor& vhost, const connection_settings& settings,
                    const permission_record& permissions) {
                  self->state.rights = access_rights(permissions);
                  self->state.vhost = vhost;
                  self->state.consumer_timeout_ms = settings.consumer_timeout_ms;
                  self->state.max_message_bytes = settings.max_message_bytes;
                  self->state.channel_max = settings.channel_max;
                  self->monitor(vhost);
                  self->state.link->reply(request, {}, {});
                },
                [=](caf::error& err) {
                  self->state.link->reply(request, err, {});
                  close_connection(self);
                });
      },
      [=](close_atom, uint64_t request) {
        // Publishes still waiting for an exchange lookup were accepted before the close: they
        // are routed first.
        auto& st = self->state;
        if (std::any_of(st.channels.begin(), st.channels.end(),
                        [](const auto& c) { return c.second.open && c.second.resolving; })) {
          st.close_after_publishes = request == 0 ? std::optional<uint64_t>(0) : request;
          return;
        }
        close_connection(self);
        if (request != 0) self->state.link->reply(request, {}, {});
      },
      [=](timeout_atom) { check_timeouts(self); },
      [=](stats_atom) {
        auto& st = self->state;
        uint32_t open = 0;
        for (const auto& [id, ch] : st.channels) open += ch.open ? 1 : 0;
        connection_info info;
        info.name = st.hello.client_name;
        info.peer = st.hello.peer;
        info.vhost = st.hello.vhost;
        info.user = st.hello.user;
        info.channels = open;
        info.traffic = st.traffic;
        return info;
      },
      // --- channels --------------------------------------------------------------------------
      [=](open_atom, uint64_t request, uint16_t id) {
        auto& st = self->state;
        auto serial = ++st.channel_opens;  // counted as the front door counts its opens
        if (st.channels.count(id) != 0 && st.channels[id].open) {
          st.link->reply(request,
                         make_broker_error(reply_code::channel_error,
                                           "channel " + std::to_string(id) + " is already open"),
                         {});
          return;
        }
        auto open = std::count_if(st.channels.begin(), st.channels.end(),
                                  [](const auto& c) { return c.second.open; });
        if (open >= st.channel_max) {
          st.link->reply(request,
                         make_broker_error(reply_code::not_allowed,
                                           "this connection has " + std::to_string(open) +
                                               " channels open, the maximum (channel_max)"),
                         {});
          return;
        }
        st.channels[id] = channel_state{};
        st.channels[id].serial = serial;
        st.link->reply(request, {}, {});
      },
      [=](close_atom, uint64_t request, uint16_t id) {
        auto c = self->state.channels.find(id);
        if (c != self->state.channels.end() && c->second.open && c->second.resolving) {
          c->second.close_after_publishes = request;  // routed first, as accepted before
          return;
        }
        close_channel(self, id, {reply_code::channel_error, "closed by the client"});
        self->state.channels.erase(id);
        if (request != 0) self->state.link->reply(request, {}, {});
      },
      [=](qos_atom, uint64_t request, uint16_t id, uint32_t prefetch) {
        if (auto* ch = open_channel(self, request, id)) {
          ch->default_prefetch = prefetch;
          self->state.link->reply(request, {}, {});
        }
      },
      [=](qos_atom, uint64_t request, uint16_t id, uint32_t prefetch, bool global) {
        // AMQP's global=true: one limit for all the channel's consumers together.
        if (auto* ch = open_channel(self, request, id)) {
          if (global)
            grant_all(self, id, *ch, ch->credit.set_global(prefetch));
          else
            ch->default_prefetch = prefetch;
          self->state.link->reply(request, {}, {});
        }
      },
      [=](confirm_atom, uint64_t request, uint16_t id) {
        if (auto* ch = open_channel(self, request, id)) {
          ch->confirm_mode = true;
          self->state.link->reply(request, {}, {});
        }
      },
      // --- declarations ----------------------------------------------------------------------
      [=](declare_atom, uint64_t request, uint16_t id, exchange_spec& spec, bool passive) {
        if (open_channel(self, request, id) &&
            (passive || allowed(self, request, id, access_kind::configure, "exchange", spec.name)))
          relay(self, request, id, self->state.vhost, declare_atom::value, std::move(spec),
                passive);
      },
      [=](delete_atom, exchanges_atom, uint64_t request, uint16_t id, std::string& name,
          bool if_unused) {
        if (open_channel(self, request, id) &&
            allowed(self, request, id, access_kind::configure, "exchange", name))
          relay(self, request, id, self->state.vhost, delete_atom::value, exchanges_atom::value,
                std::move(name), if_unused);
      },
      [=](declare_atom, uint64_t request, uint16_t id, queue_spec& spec, bool passive) {
        // A server-named queue is checked by the prefix of the names the server gives.
        auto name = spec.name.empty() ? std::string("amq.gen-") : spec.name;
        if (open_channel(self, request, id) &&
            (passive || allowed(self, request, id, access_kind::configure, "queue", name)))
          relay<queue_info>(self, request, id, self->state.vhost, declare_atom::value,
                            std::move(spec), passive, self_handle(self));
      },
      [=](delete_atom, queues_atom, uint64_t request, uint16_t id, std::string& name,
          bool if_unused, bool if_empty) {
        if (open_channel(self, request, id) &&
            allowed(self, request, id, access_kind::configure, "queue", name))
          relay<uint32_t>(self, request, id, self->state.vhost, delete_atom::value,
                          queues_atom::value, std::move(name), if_unused, if_empty,
                          self_handle(self));
      },
      [=](purge_atom, uint64_t request, uint16_t id, std::string& name) {
        if (open_channel(self, request, id) &&
            allowed(self, request, id, access_kind::read, "queue", name))
          relay<uint32_t>(self, request, id, self->state.vhost, purge_atom::value, std::move(name),
                          self_handle(self));
      },
      [=](bind_atom, uint64_t request, uint16_t id, binding_spec& b) {
        if (open_channel(self, request, id) && binding_allowed(self, request, id, b))
          relay(self, request, id, self->state.vhost, bind_atom::value, std::move(b),
                self_handle(self));
      },
      [=](unbind_atom, uint64_t request, uint16_t id, binding_spec& b) {
        if (open_channel(self, request, id) && binding_allowed(self, request, id, b))
          relay(self, request, id, self->state.vhost, unbind_atom::value, std::move(b),
                self_handle(self));
      },
      // --- publishing ------------------------------------------------------------------------
      [=](publish_atom, uint64_t request, uint16_t id, std::vector<message_ptr>& msgs) {
        if (auto* ch = open_channel(self, request, id)) {
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
      },
      [=](blocked_atom, bool blocked, const std::string&) {
        // The node's resource alarm: while it lasts, publish calls wait in their backlog and
        // are answered (which is the publisher's credit) once it clears.
        self->state.blocked = blocked;
        if (blocked) return;
        std::vector<uint16_t> ids;
        for (const auto& [id, ch] : self->state.channels) ids.push_back(id);
        for (auto id : ids) drain_publishes(self, id);
      },
      [=](confirm_atom, uint16_t id, std::vector<uint64_t>& acked, std::vector<uint64_t>& nacked) {
        auto c = self->state.channels.find(id);
        if (c == self->state.channels.end() || !c->second.open) return;
        auto& ch = c->second;
        for (auto seq : acked) {
          auto p = ch.pending.find(seq);
          if (p == ch.pending.end()) continue;
          ++p->second.acked;
          finish_publish(self, ch, seq);
        }
        for (auto seq : nacked) {
          auto p = ch.pending.find(seq);
          if (p == ch.pending.end()) continue;
          ++p->second.nacked;
          finish_publish(self, ch, seq);
        }
      },
      // --- consuming -------------------------------------------------------------------------
      [=](consume_atom, uint64_t request, uint16_t id, consume_request& c) {
        auto* ch = open_channel(self, request, id);
        if (ch == nullptr || !allowed(self, request, id, access_kind::read, "queue", c.queue))
          return;
        if (c.tag.empty()) c.tag = generated_name("amq.ctag-");
        auto tag = c.tag;
        auto no_ack = c.no_ack;
        auto prefetch = c.prefetch;
        if (auto problem = check_name("consumer tag", tag); !problem.empty()) {
          fail(self, request, id, make_broker_error(reply_code::precondition_failed, problem));
          return;
        }
        if (ch->consumers.count(tag) != 0) {
          fail(self, request, id,
               make_broker_error(reply_code::not_allowed, "consumer tag " + quote(tag) +
                                                              " is already in use on channel " +
                                                              std::to_string(id)));
          return;
        }
        if (prefetch == 0) prefetch = ch->default_prefetch;
        if (no_ack) prefetch = 0;
        // Consumers limited by acks (their own prefetch, the channel's, or both) start with
        // what the limits allow; the others with a window refilled as deliveries are written.
        uint32_t initial = unlimited_consumer_window;
        if (ch->credit.limited(no_ack, prefetch)) initial = ch->credit.add(tag, prefetch);
        // Reserve the tag now so a second consume with it fails even before the queue answers.
        auto serial = ch->serial;
        auto& reserved = ch->consumers[tag];
        reserved.queue_name = c.queue;
        reserved.no_ack = no_ack;
        reserved.prefetch = prefetch;
        self->request(self->state.vhost, caf::infinite, find_atom::value, queues_atom::value,
                      c.queue, self_handle(self))
            .then(
                [=](caf::actor& q) {
                  consumer_spec spec{self_handle(self),
                                     self->state.hello.client_name,
                                     id,
                                     tag,
                                     no_ack,
                                     c.exclusive,
                                     prefetch,
                                     initial,
                                     c.priority};
                  self->request(q, caf::infinite, consume_atom::value, std::move(spec))
                      .then(
                          [=]() {
                            auto* c = same_channel(self, id, serial);
                            if (c == nullptr) {
                              self->send(q, cancel_atom::value, self_handle(self), id, tag, true);
                              reply_channel_gone(self, request, id);
                              return;
                            }
                            auto& consumer = c->consumers[tag];
                            consumer.queue = q;
                            grant_credit(self, id, *c, tag,
                                         std::exchange(consumer.unsent_credit, 0));
                            touch_queue(*c, q);
                            self->state.link->reply(request, {}, caf::make_message(tag));
                          },
                          [=](caf::error& err) {
                            consume_failed(self, request, id, serial, tag, err);
                          });
                },
                [=](caf::error& err) { consume_failed(self, request, id, serial, tag, err); });
      },
      [=](cancel_atom, uint64_t request, uint16_t id, const std::string& tag,
          bool requeue_unacked) {
        auto* ch = open_channel(self, request, id);
        if (ch == nullptr) return;
        auto c = ch->consumers.find(tag);
        if (c == ch->consumers.end() || !c->second.queue) {
          self->state.link->reply(request, {}, {});
          return;
        }
        // Answer once the queue has dropped the consumer: deliveries it sent before that are
        // then already here, so no-ack ones reach the client ahead of the cancel's answer.
        c->second.cancelling = true;
        c->second.keep_unacked = !requeue_unacked;
        auto forget = [=] {
          auto chan = self->state.channels.find(id);
          if (chan != self->state.channels.end() && chan->second.open) {
            auto& st = chan->second;
            drop_consumer(self, id, st, tag);
            // The queue requeued this consumer's unacked messages; their tags are void now.
            // Otherwise (AMQP's basic.cancel) they stay unacked on the channel, to be settled.
            for (auto i = st.unacked.begin(); i != st.unacked.end();) {
              if (i->second.consumer_tag != tag) {
                ++i;
              } else if (requeue_unacked) {
                i = st.unacked.erase(i);
              } else {
                i->second.consumer_tag.clear();  // settled like a get: no credit to give back
                ++i;
              }
            }
          }
          self->state.link->reply(request, {}, {});
        };
        self->request(c->second.queue, caf::infinite, cancel_atom::value, self_handle(self), id,
                      tag, requeue_unacked)
            .then([=]() { forget(); }, [=](caf::error&) { forget(); });
      },
      [=](cancelled_atom, uint16_t id, const std::string& tag, const std::string& reason) {
        auto c = self->state.channels.find(id);
        if (c == self->state.channels.end() || !c->second.open) return;
        if (c->second.consumers.count(tag) != 0) {
          drop_consumer(self, id, c->second, tag);
          self->state.link->consumer_cancelled(id, tag, reason);
        }
      },
      [=](deliver_atom, uint16_t id, const std::string& tag, bool no_ack,
          std::vector<queued_delivery>& batch) {
        // Deliveries for a channel that closed meanwhile are dropped here: the queue still holds
        // them as pending for this channel and requeues them when the close reaches it.
        auto c = self->state.channels.find(id);
        if (c == self->state.channels.end() || !c->second.open) return;
        auto& ch = c->second;
        // A manual-ack delivery for a consumer already cancelled was requeued by the queue when
        // the cancel reached it: passing it on would hand out a message that is ready again.
        auto consumer = ch.consumers.find(tag);
        if (!no_ack && (consumer == ch.consumers.end() ||
                        (consumer->second.cancelling && !consumer->second.keep_unacked)))
          return;
        auto queue = caf::actor_cast<caf::actor>(self->current_sender());
        forward_deliveries(self, id, ch, tag, no_ack, queue, batch);
      },
      [=](flushed_atom, uint16_t id, const std::string& tag, uint32_t n) {
        // The front door wrote n deliveries to the network: consumers that are not limited by
        // acks (no-ack or no prefetch) get that much credit back.
        auto c = self->state.channels.find(id);
        if (c == self->state.channels.end() || !c->second.open) return;
        auto consumer = c->second.consumers.find(tag);
        if (consumer == c->second.consumers.end()) return;
        if (!c->second.credit.tracks(tag)) grant_credit(self, id, c->second, tag, n);
      },
      [=](get_atom, uint64_t request, uint16_t id, std::string& queue, bool no_ack) {
        if (!open_channel(self, request, id) ||
            !allowed(self, request, id, access_kind::read, "queue", queue))
          return;
        self->request(self->state.vhost, caf::infinite, find_atom::value, queues_atom::value, queue,
                      self_handle(self))
            .then(
                [=](caf::actor& q) {
                  self->request(q, caf::infinite, get_atom::value, self_handle(self), id, no_ack)
                      .then(
                          [=](get_reply& r) {
                            auto c = self->state.channels.find(id);
                            if (c == self->state.channels.end() || !c->second.open) {
                              // The channel closed meanwhile; the queue requeues what it handed
                              // out for this channel when the close reaches it.
                              reply_channel_gone(self, request, id);
                              return;
                            }
                            if (!r.found) {
                              self->state.link->reply(request, {}, {});
                              return;
                            }
                            auto& ch = c->second;
                            // Every delivery takes the next tag, acked or not: a tag of 0
                            // means "no message" to some clients.
                            delivery d{++ch.next_delivery_tag, r.delivery.redelivered,
                                       r.delivery.msg, r.remaining};
                            self->state.traffic.count_out(d.msg->body.size(), d.redelivered);
                            if (!no_ack) {
                              ch.unacked.emplace(d.tag,
                                                 channel_state::unacked_entry{
                                                     q, r.delivery.delivery_id, {}, steady_ms()});
                              touch_queue(ch, q);
                              watch_timeout(self);
                            }
                            self->state.link->reply(request, {}, caf::make_message(std::move(d)));
                          },
                          [=](caf::error& err) { fail(self, request, id, err); });
                },
                [=](caf::error& err) { fail(self, request, id, err); });
      },
      [=](settle_atom, uint64_t request, uint16_t id, uint64_t tag, bool multiple,
          settle_kind kind) {
        auto* ch = open_channel(self, request, id);
        if (ch == nullptr) return;
        if (!settle(self, id, *ch, tag, multiple, kind)) {
          fail(self, request, id,
               make_broker_error(reply_code::precondition_failed,
                                 "unknown delivery tag " + std::to_string(tag) + " on channel " +
                                     std::to_string(id)));
          return;
        }
        self->state.link->reply(request, {}, {});
      },
      [=](settle_atom, uint64_t request, uint16_t id, const std::vector<uint64_t>& tags) {
        auto* ch = open_channel(self, request, id);
        if (ch == nullptr) return;
        if (auto unknown = ack_each(self, id, *ch, tags)) {
          fail(self, request, id,
               make_broker_error(reply_code::precondition_failed,
                                 "unknown delivery tag " + std::to_string(*unknown) +
                                     " on channel " + std::to_string(id)));
          return;
        }
        self->state.link->reply(request, {}, {});
      },
      [=](recover_atom, uint64_t request, uint16_t id) {
        auto* ch = open_channel(self, request, id);
        if (ch == nullptr) return;
        if (!ch->unacked.empty())
          settle(self, id, *ch, ch->unacked.rbegin()->first, true, settle_kind::requeue);
        self->state.link->reply(request, {}, {});
      },
      [=](lookup_atom, uint64_t request, uint16_t id, const message_id& msg_id) {
        if (open_channel(self, request, id))
          relay<lookup_reply>(self, request, id, self->state.vhost, lookup_atom::value, msg_id);
      },
      // --- administration --------------------------------------------------------------------
      [=](declare_atom, vhost_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, self->state.node, declare_atom::value, vhost_atom::value,
              std::move(name));
      },
      [=](delete_atom, vhost_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, self->state.node, delete_atom::value, vhost_atom::value,
              std::move(name));
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name, vhost_limits& limits) {
        relay(self, request, 0, self->state.node, settings_atom::value, vhost_atom::value,
              std::move(name), limits);
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name) {
        relay<vhost_limits>(self, request, 0, self->state.node, settings_atom::value,
                            vhost_atom::value, std::move(name));
      },
      [=](declare_atom, user_atom, uint64_t request, std::string& name, std::string& password,
          std::vector<std::string>& tags) {
        relay(self, request, 0, self->state.node, declare_atom::value, user_atom::value,
              std::move(name), std::move(password), std::move(tags));
      },
      [=](settings_atom, user_atom, uint64_t request, std::string& name, std::string& password) {
        relay(self, request, 0, self->state.node, settings_atom::value, user_atom::value,
              std::move(name), std::move(password));
      },
      [=](delete_atom, user_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, self->state.node, delete_atom::value, user_atom::value,
              std::move(name));
      },
      [=](declare_atom, permission_atom, uint64_t request, permission_record& p) {
        relay(self, request, 0, self->state.node, declare_atom::value, permission_atom::value,
              std::move(p));
      },
      [=](delete_atom, permission_atom, uint64_t request, std::string& user, std::string& vhost) {
        relay(self, request, 0, self->state.node, delete_atom::value, permission_atom::value,
              std::move(user), std::move(vhost));
      },
      [=](list_atom, permission_atom, uint64_t request) {
        relay<std::vector<permission_record>>(self, request, 0, self->state.node, list_atom::value,
                                              permission_atom::value);
      },
      [=](export_atom, uint64_t request) {
        relay<definitions>(self, request, 0, self->state.node, export_atom::value);
      },
      [=](import_atom, uint64_t request, definitions& defs) {
        relay(self, request, 0, self->state.node, import_atom::value, std::move(defs));
      },
      [=](list_atom, user_atom, uint64_t request) {
        relay<std::vector<user_record>>(self, request, 0, self->state.node, list_atom::value,
                                        user_atom::value);
      },
      [=](list_atom, vhost_atom, uint64_t request) {
        relay<std::vector<std::string>>(self, request, 0, self->state.node, list_atom::value,
                                        vhost_atom::value);
      },
      [=](stats_atom, uint64_t request) {
        relay<node_stats_info>(self, request, 0, self->state.node, stats_atom::value);
      },
      [=](list_atom, conns_atom, uint64_t request) {
        relay<std::vector<connection_info>>(self, request, 0, self->state.node, list_atom::value,
                                            conns_atom::value);
      },
      [=](list_atom, exchanges_atom, uint64_t request) {
        relay<std::vector<exchange_info>>(self, request, 0, self->state.vhost, list_atom::value,
                                          exchanges_atom::value);
      },
      [=](list_atom, queues_atom, uint64_t request) {
        relay<std::vector<queue_info>>(self, request, 0, self->state.vhost, list_atom::value,
                                       queues_atom::value);
      },
      [=](list_atom, bindings_atom, uint64_t request) {
        relay<std::vector<binding_info>>(self, request, 0, self->state.vhost, list_atom::value,
                                         bindings_atom::value);
      },
      [=](list_atom, consumers_atom, uint64_t request) {
        relay<std::vector<consumer_info>>(self, request, 0, self->state.vhost, list_atom::value,
                                          consumers_atom::value);
      },
  };
}

}  // namespace warren
