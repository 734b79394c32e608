// The connection actor's parts, shared by its source files and by nothing else:
// connection_actor.cpp (the behaviour, login, close, the vhost watch), connection_channels.cpp
// (channel lifecycle, failures, permissions, declarations, administration),
// connection_publish.cpp (routing and confirms) and connection_consume.cpp (consumers, gets,
// settling, the consumer timeout).
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/node_protocol.hpp"
#include "actors/common/queue_protocol.hpp"
#include "actors/common/vhost_protocol.hpp"
#include "actors/connection/connection_actor.hpp"

#include <caf/send.hpp>

#include <optional>
#include <string>
#include <vector>

namespace warren::connection_parts {

using self_ptr = connection_actor_type::stateful_pointer<connection_state>;

/// The actor as an untyped handle, as queues and the vhost keep it.
caf::actor self_handle(self_ptr self);

/// Sends to a queue, as this actor; the message is checked against the queue's interface.
template <class... Ts>
void tell_queue(self_ptr self, const caf::actor& queue, Ts&&... xs) {
  caf::send_as(self_handle(self), queue_handle(queue), std::forward<Ts>(xs)...);
}

// --- channels (connection_channels.cpp) --------------------------------------------------------

/// The open channel a request names, or nullptr after answering it with CHANNEL_ERROR.
channel_state* open_channel(self_ptr self, uint64_t request, uint16_t id);
/// The channel a late answer belongs to: open and the same opening (`serial`); else nullptr.
channel_state* same_channel(self_ptr self, uint16_t id, uint64_t serial);
/// Answers a request whose channel closed while it was being carried out.
void reply_channel_gone(self_ptr self, uint64_t request, uint16_t id);
/// Closes a channel: its queues requeue what it held, waiting publish calls fail; a tombstone
/// stays so that later calls get a clear error.
void close_channel(self_ptr self, uint16_t id, broker_failure reason);
/// Answers a failed request; a channel error also closes the channel (AMQP's rules).
void fail(self_ptr self, uint64_t request, uint16_t channel, const caf::error& err);
/// Whether the user may do `kind` to `name`; if not the request fails with ACCESS_REFUSED.
bool allowed(self_ptr self, uint64_t request, uint16_t channel, access_kind kind,
             const char* resource, const std::string& name);
/// Remembers a queue this channel holds deliveries or consumers of (told when it closes).
void touch_queue(channel_state& ch, const caf::actor& queue);
/// Closes every channel and stops the actor.
void close_connection(self_ptr self);

void open_new_channel(self_ptr self, uint64_t request, uint16_t id);
void close_by_client(self_ptr self, uint64_t request, uint16_t id);

void set_qos(self_ptr self, uint64_t request, uint16_t id, uint32_t prefetch, bool global);
void confirm_select(self_ptr self, uint64_t request, uint16_t id);

// Declarations: the channel must be open and the user allowed; the vhost carries them out.
void declare_exchange(self_ptr self, uint64_t request, uint16_t id, exchange_spec& spec,
                      bool passive);
void delete_exchange(self_ptr self, uint64_t request, uint16_t id, std::string& name,
                     bool if_unused);
void declare_queue(self_ptr self, uint64_t request, uint16_t id, queue_spec& spec, bool passive);
void delete_queue(self_ptr self, uint64_t request, uint16_t id, std::string& name, bool if_unused,
                  bool if_empty, bool force);
void stream_request(self_ptr self, uint64_t request, uint16_t id, stream_command& cmd);
void purge(self_ptr self, uint64_t request, uint16_t id, std::string& name);
/// Binds (add) or unbinds.
void bind(self_ptr self, uint64_t request, uint16_t id, binding_spec& b, bool add);

/// Sends a request and relays its answer to the front door: the error, or the answer Ts (none,
/// or one of request_answer's types; anything else fails to compile).
template <class... Ts, class Dest, class... Args>
void relay(self_ptr self, uint64_t request, uint16_t channel, const Dest& dest, Args&&... args) {
  static_assert(sizeof...(Ts) <= 1, "a request's answer is one value or none");
  self->request(dest, caf::infinite, std::forward<Args>(args)...)
      .then([=](Ts&... xs) { self->state.link->reply(request, {}, make_answer(std::move(xs)...)); },
            [=](caf::error& err) { fail(self, request, channel, err); });
}

// --- administration (connection_admin.cpp) -----------------------------------------------------

/// Relays node administration to the node.
connection_access_api::behavior_type access_behavior(self_ptr self);
/// Relays listings and statistics to the node, or to the vhost for the vhost's own.
connection_listing_api::behavior_type listing_behavior(self_ptr self);

// --- publishing (connection_publish.cpp) -------------------------------------------------------

/// Checks and queues a publish call, then routes what it can.
void publish(self_ptr self, uint64_t request, uint16_t id, std::vector<message_ptr>& msgs);
/// Routes waiting publish calls in order, as far as their exchanges are known.
void drain_publishes(self_ptr self, uint16_t id);
/// Carries out closes that waited for publishes accepted before them.
void closes_after_publishes(self_ptr self, uint16_t id);
/// Queues confirmed (acked) or refused (nacked) publish sequence numbers.
void confirm(self_ptr self, uint16_t id, const std::vector<uint64_t>& acked,
             const std::vector<uint64_t>& nacked);
/// The resource alarm: publishes wait while it lasts.
void set_blocked(self_ptr self, bool blocked);

/// A change to the vhost's topology (declare, delete, bind, purge) on channel `id` is under
/// way: the channel's publishes wait until it is settled (channel_state::topology_in_flight).
/// Returns the channel's serial, for topology_settled.
uint64_t topology_started(self_ptr self, uint16_t id);
/// Its answer came: publishes that waited behind it go on.
void topology_settled(self_ptr self, uint16_t id, uint64_t serial);

/// Relays a change to the vhost's topology, holding the channel's publishes until it is
/// answered.
template <class... Ts, class... Args>
void relay_topology(self_ptr self, uint64_t request, uint16_t channel, Args&&... args) {
  static_assert(sizeof...(Ts) <= 1, "a request's answer is one value or none");
  auto serial = topology_started(self, channel);
  self->request(vhost_handle(self->state.vhost), caf::infinite, std::forward<Args>(args)...)
      .then(
          [=](Ts&... xs) {
            self->state.link->reply(request, {}, make_answer(std::move(xs)...));
            topology_settled(self, channel, serial);
          },
          [=](caf::error& err) {
            fail(self, request, channel, err);
            topology_settled(self, channel, serial);
          });
}

// --- consuming (connection_consume.cpp) --------------------------------------------------------

void consume(self_ptr self, uint64_t request, uint16_t id, consume_request& c);
void cancel(self_ptr self, uint64_t request, uint16_t id, const std::string& tag,
            bool requeue_unacked);
/// A cluster member went down: every publish still waiting for a confirm is refused (nacked),
/// since a queue there may never answer.
void member_down(self_ptr self);
/// A remote queue a consumer of ours uses is gone with its node: the consumer is cancelled.
void queue_node_down(self_ptr self, const caf::actor_addr& queue);
/// A delete of `queue` by this connection was answered: cancels held for it go out now.
void queue_delete_answered(self_ptr self, const std::string& queue);
void cancelled_by_queue(self_ptr self, uint16_t id, const std::string& tag,
                        const std::string& reason);
void deliver(self_ptr self, uint16_t id, const std::string& tag, bool no_ack,
             std::vector<queued_delivery>& batch);
void flushed(self_ptr self, uint16_t id, const std::string& tag, uint32_t n);
void get(self_ptr self, uint64_t request, uint16_t id, const std::string& queue, bool no_ack);
void peek(self_ptr self, uint64_t request, uint16_t id, const std::string& queue, uint64_t from,
          uint32_t count);
void settle_request(self_ptr self, uint64_t request, uint16_t id, uint64_t tag, bool multiple,
                    settle_kind kind);
void ack_each_request(self_ptr self, uint64_t request, uint16_t id,
                      const std::vector<uint64_t>& tags);
void recover(self_ptr self, uint64_t request, uint16_t id);
/// Grants credit of every consumer in `g` to its queue.
void grant_all(self_ptr self, uint16_t id, channel_state& ch, const channel_credit::grants& g);
/// Closes channels holding a delivery unacked for longer than the consumer timeout.
void check_timeouts(self_ptr self);

}  // namespace warren::connection_parts
