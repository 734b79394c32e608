// Channel lifecycle, failures, permissions, declarations and administration for the connection
// actor (see connection_parts.hpp).
#include "actors/connection/connection_parts.hpp"

#include "core/names.hpp"

#include <algorithm>

namespace warren::connection_parts {

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
  for (const auto& q : ch.queues_touched)
    tell_queue(self, q, close_atom::value, self_handle(self), id);
  auto closed = make_broker_error(
      reply_code::channel_error, "channel " + std::to_string(id) + " closed: " + to_string(reason));
  for (auto request : ch.confirms.abandon()) st.link->reply(request, closed, {});
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

bool allowed(self_ptr self, uint64_t request, uint16_t channel, access_kind kind,
             const char* resource, const std::string& name) {
  // Every name a client sends passes here first: checked before anything runs over it.
  if (auto problem = check_key(std::string(resource) + " name", name); !problem.empty()) {
    fail(self, request, channel, make_broker_error(reply_code::precondition_failed, problem));
    return false;
  }
  auto refused = self->state.rights.check(kind, resource, name);
  if (refused.empty()) return true;
  fail(self, request, channel, make_broker_error(reply_code::access_refused, refused));
  return false;
}

namespace {

// A binding needs write on its destination and read on its source exchange.
bool binding_allowed(self_ptr self, uint64_t request, uint16_t channel, const binding_spec& b) {
  return allowed(self, request, channel, access_kind::write, b.to_exchange ? "exchange" : "queue",
                 b.destination) &&
         allowed(self, request, channel, access_kind::read, "exchange", b.exchange);
}

}  // namespace

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

void reply_channel_gone(self_ptr self, uint64_t request, uint16_t id) {
  self->state.link->reply(
      request,
      make_broker_error(reply_code::channel_error, "channel " + std::to_string(id) + " was closed"),
      {});
}

void open_new_channel(self_ptr self, uint64_t request, uint16_t id) {
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
    st.link->reply(
        request,
        make_broker_error(reply_code::not_allowed, "this connection has " + std::to_string(open) +
                                                       " channels open, the maximum (channel_max)"),
        {});
    return;
  }
  st.channels[id] = channel_state{};
  st.channels[id].serial = serial;
  st.link->reply(request, {}, {});
}

void close_by_client(self_ptr self, uint64_t request, uint16_t id) {
  auto c = self->state.channels.find(id);
  if (c != self->state.channels.end() && c->second.open && c->second.publishes_waiting()) {
    c->second.close_after_publishes = request;  // routed first, as accepted before
    return;
  }
  close_channel(self, id, {reply_code::channel_error, "closed by the client"});
  self->state.channels.erase(id);
  if (request != 0) self->state.link->reply(request, {}, {});
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

// --- declarations: checked here, carried out by the vhost ------------------------------------

// Whether `args` can be stored and read back; a refusal fails the request.
bool storable(self_ptr self, uint64_t request, uint16_t channel, const std::string& what,
              const field_table& args) {
  auto problem = check_field_depth(what, args);
  if (problem.empty()) return true;
  fail(self, request, channel, make_broker_error(reply_code::precondition_failed, problem));
  return false;
}

void declare_exchange(self_ptr self, uint64_t request, uint16_t id, exchange_spec& spec,
                      bool passive) {
  if (open_channel(self, request, id) &&
      storable(self, request, id, "exchange arguments", spec.arguments) &&
      (passive || allowed(self, request, id, access_kind::configure, "exchange", spec.name)))
    relay_topology(self, request, id, declare_atom::value, std::move(spec), passive);
}

void delete_exchange(self_ptr self, uint64_t request, uint16_t id, std::string& name,
                     bool if_unused) {
  if (!open_channel(self, request, id) ||
      !allowed(self, request, id, access_kind::configure, "exchange", name))
    return;
  // Publishes behind the delete look the name up again: a 404, or the exchange declared since,
  // never the one deleted.
  auto& st = self->state;
  if (auto e = st.exchanges.find(name); e != st.exchanges.end()) {
    self->demonitor(e->second.actor);
    st.exchanges.erase(e);
  }
  relay_topology(self, request, id, delete_atom::value, exchanges_atom::value, std::move(name),
                 if_unused);
}

void declare_queue(self_ptr self, uint64_t request, uint16_t id, queue_spec& spec, bool passive) {
  // A server-named queue is checked by the prefix of the names the server gives.
  auto name = spec.name.empty() ? std::string("amq.gen-") : spec.name;
  if (open_channel(self, request, id) &&
      storable(self, request, id, "queue arguments", spec.arguments) &&
      (passive || allowed(self, request, id, access_kind::configure, "queue", name)))
    relay_topology<queue_info>(self, request, id, declare_atom::value, std::move(spec), passive,
                               self_handle(self));
}

void delete_queue(self_ptr self, uint64_t request, uint16_t id, std::string& name, bool if_unused,
                  bool if_empty, bool force) {
  if (!open_channel(self, request, id) ||
      !allowed(self, request, id, access_kind::configure, "queue", name))
    return;
  ++self->state.deleting[name];
  auto queue = name;
  auto serial = topology_started(self, id);
  self->request(vhost_handle(self->state.vhost), caf::infinite, delete_atom::value,
                queues_atom::value, std::move(name), if_unused, if_empty, force, self_handle(self))
      .then(
          [=](uint32_t removed) {
            self->state.link->reply(request, {}, make_answer(removed));
            queue_delete_answered(self, queue);
            topology_settled(self, id, serial);
          },
          [=](caf::error& err) {
            fail(self, request, id, err);
            queue_delete_answered(self, queue);
            topology_settled(self, id, serial);
          });
}

// Commits, group listings and reads by offset need read access to the stream.
void stream_request(self_ptr self, uint64_t request, uint16_t id, stream_command& cmd) {
  if (open_channel(self, request, id) &&
      allowed(self, request, id, access_kind::read, "queue", cmd.queue))
    relay<stream_reply>(self, request, id, vhost_handle(self->state.vhost), stream_atom::value,
                        std::move(cmd), self_handle(self));
}

void purge(self_ptr self, uint64_t request, uint16_t id, std::string& name) {
  if (open_channel(self, request, id) &&
      allowed(self, request, id, access_kind::read, "queue", name))
    relay_topology<uint32_t>(self, request, id, purge_atom::value, std::move(name),
                             self_handle(self));
}

void bind(self_ptr self, uint64_t request, uint16_t id, binding_spec& b, bool add) {
  if (!open_channel(self, request, id) ||
      !storable(self, request, id, "binding arguments", b.arguments) ||
      !binding_allowed(self, request, id, b))
    return;
  if (add)
    relay_topology(self, request, id, bind_atom::value, std::move(b), self_handle(self));
  else
    relay_topology(self, request, id, unbind_atom::value, std::move(b), self_handle(self));
}

void set_qos(self_ptr self, uint64_t request, uint16_t id, uint32_t prefetch, bool global) {
  // AMQP's global=true: one limit for all the channel's consumers together.
  if (auto* ch = open_channel(self, request, id)) {
    if (global)
      grant_all(self, id, *ch, ch->credit.set_global(prefetch));
    else
      ch->default_prefetch = prefetch;
    self->state.link->reply(request, {}, {});
  }
}

void confirm_select(self_ptr self, uint64_t request, uint16_t id) {
  if (auto* ch = open_channel(self, request, id)) {
    ch->confirm_mode = true;
    self->state.link->reply(request, {}, {});
  }
}

}  // namespace warren::connection_parts
