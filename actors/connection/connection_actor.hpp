// Connection actor: one per client connection. Owns the state of its channels (delivery tags,
// unacked deliveries, consumers, prefetch, confirm mode and outstanding publishes) and cleans up
// when the client goes: consumers cancelled, unacked messages requeued, exclusive queues deleted
// (the vhost watches this actor for that).
//
// Its protocol is connection_protocol.hpp: the front doors send through connection_ref, and
// requests are answered through client_link::reply.
//
// Publishing: messages are routed through a cache of exchange actors (filled from the vhost,
// emptied when an exchange goes). Every published message gets a channel sequence number; the
// exchange reports how many queues each went to and each queue confirms what it took, so a
// publish call is answered once every queue has its message. That answer is the publisher's
// credit: a client with a bounded number of calls in flight cannot flood the broker.
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/connection_protocol.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/connection/channel_credit.hpp"
#include "actors/connection/delivery_tags.hpp"
#include "actors/connection/publish_confirms.hpp"
#include "actors/node/permissions.hpp"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

namespace warren {

/// Deliveries a consumer without a prefetch limit (or with no-ack) may have in flight to the
/// network before the front door reports them written.
constexpr uint32_t unlimited_consumer_window = 1000;

struct channel_state {
  /// Delivery tags and the deliveries held unacked, with the queue each came from.
  using tags = delivery_tags<caf::actor>;
  struct consumer_entry {
    caf::actor queue;  // unset until the queue took the consumer
    std::string queue_name;
    bool no_ack = false;
    uint32_t prefetch = 0;
    bool cancelling = false;     // cancel sent to the queue, not yet confirmed
    bool keep_unacked = false;   // that cancel leaves unacked deliveries on the channel
    uint32_t unsent_credit = 0;  // granted before the queue took the consumer
  };
  struct queued_publish {
    uint64_t request;
    std::vector<message_ptr> msgs;
  };

  bool open = true;
  uint64_t serial = 0;  // which channel open of the connection this is (from 1)
  broker_failure closed_because;
  bool confirm_mode = false;
  uint32_t default_prefetch = 0;  // qos global=false: for consumers started after it
  channel_credit credit;          // what limited consumers may have out (qos global=true too)
  tags unacked;
  std::map<std::string, consumer_entry> consumers;
  publish_confirms confirms;                   // publish calls waiting for their outcomes
  std::deque<queued_publish> publish_backlog;  // waiting for exchange lookups, in order
  bool resolving = false;
  // Declares, deletes and binds sent to the vhost and not answered yet: publishes wait behind
  // them, so that a channel's methods take effect in the order it sent them, no-wait or not.
  size_t topology_in_flight = 0;
  std::optional<uint64_t> close_after_publishes;  // the client's close, once resolving ends
  std::vector<caf::actor> queues_touched;         // told when this channel closes

  // Whether publish calls accepted earlier still wait to be routed (a close waits for them).
  bool publishes_waiting() const {
    return resolving || (topology_in_flight != 0 && !publish_backlog.empty());
  }
};

struct connection_state {
  std::shared_ptr<client_link> link;
  caf::actor node;
  caf::actor vhost;
  client_hello hello;
  std::map<uint16_t, channel_state> channels;
  struct exchange_entry {
    caf::actor actor;
    bool internal;
  };
  std::unordered_map<std::string, exchange_entry> exchanges;
  bool closed = false;
  std::optional<uint64_t> close_after_publishes;  // the client's close, once lookups end
  bool blocked = false;  // the resource alarm holds publishes back (they wait in the backlog)
  uint64_t channel_opens = 0;
  // A channel whose oldest unacked delivery is older than this is closed with 406 (RabbitMQ's
  // consumer_timeout); 0 = never. Checked by one timer while anything is unacked.
  int64_t consumer_timeout_ms = 0;
  uint64_t max_message_bytes = UINT64_MAX;
  uint16_t channel_max = UINT16_MAX;
  access_rights rights;  // the user's permissions in this vhost, as of login
  // Queues this connection is deleting (calls under way, by name), and the cancels of its own
  // consumers on them, held until the delete is answered: delete-ok comes first, as RabbitMQ
  // sends it (clients such as amqplib settle the delete before they hear of the cancel).
  std::map<std::string, int> deleting;
  struct held_cancel {
    uint16_t channel;
    std::string tag, reason, queue;
  };
  std::vector<held_cancel> cancels_after_delete;
  bool timeout_check_scheduled = false;
  traffic_counters traffic;

  static inline const char* name = "connection";
};

connection_actor_type::behavior_type connection_actor(
    connection_actor_type::stateful_pointer<connection_state> self, caf::actor node,
    std::shared_ptr<client_link> link, client_hello hello);

}  // namespace warren
