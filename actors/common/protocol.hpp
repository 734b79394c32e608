// The messages actors exchange: atoms, declarations, publish batches, deliveries and listings.
//
// Every type here is plain data with an inspect() so CAF can copy, print and serialize it between
// nodes; all are registered by register_message_types (message_types.hpp). Messages travel
// between local actors as message_ptr, shared and never copied; serialized, by value.
#pragma once

#include "core/declarations.hpp"
#include "core/message.hpp"
#include "core/outcomes.hpp"
#include "core/traffic.hpp"

#include <caf/actor.hpp>
#include <caf/atom.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

// --- atoms (CAF 0.17: at most 10 characters) -------------------------------------------------
using declare_atom = caf::atom_constant<caf::atom("declare")>;
using delete_atom = caf::atom_constant<caf::atom("delete")>;
using purge_atom = caf::atom_constant<caf::atom("purge")>;
using bind_atom = caf::atom_constant<caf::atom("bind")>;
using unbind_atom = caf::atom_constant<caf::atom("unbind")>;
using unbind_q_atom = caf::atom_constant<caf::atom("unbind_q")>;
using publish_atom = caf::atom_constant<caf::atom("publish")>;
using enqueue_atom = caf::atom_constant<caf::atom("enqueue")>;
using confirm_atom = caf::atom_constant<caf::atom("confirm")>;
using consume_atom = caf::atom_constant<caf::atom("consume")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using cancelled_atom = caf::atom_constant<caf::atom("cancelled")>;
using credit_atom = caf::atom_constant<caf::atom("credit")>;
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using flushed_atom = caf::atom_constant<caf::atom("flushed")>;
using settle_atom = caf::atom_constant<caf::atom("settle")>;
using get_atom = caf::atom_constant<caf::atom("get")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;
using find_atom = caf::atom_constant<caf::atom("find")>;
using open_atom = caf::atom_constant<caf::atom("open")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using connect_atom = caf::atom_constant<caf::atom("connect")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using dead_atom = caf::atom_constant<caf::atom("dead")>;
using unused_atom = caf::atom_constant<caf::atom("unused")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using vhost_atom = caf::atom_constant<caf::atom("vhost")>;
using qos_atom = caf::atom_constant<caf::atom("qos")>;
using recover_atom = caf::atom_constant<caf::atom("recover")>;
using exchanges_atom = caf::atom_constant<caf::atom("exchanges")>;
using queues_atom = caf::atom_constant<caf::atom("queues")>;
using bindings_atom = caf::atom_constant<caf::atom("bindings")>;
using consumers_atom = caf::atom_constant<caf::atom("consumers")>;
using conns_atom = caf::atom_constant<caf::atom("conns")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using compact_atom = caf::atom_constant<caf::atom("compact")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using blocked_atom = caf::atom_constant<caf::atom("blocked")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using alarm_atom = caf::atom_constant<caf::atom("alarm")>;
using route_atom = caf::atom_constant<caf::atom("route")>;
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
using settings_atom = caf::atom_constant<caf::atom("settings")>;
using user_atom = caf::atom_constant<caf::atom("user")>;
using permission_atom = caf::atom_constant<caf::atom("permission")>;
using export_atom = caf::atom_constant<caf::atom("export")>;
using import_atom = caf::atom_constant<caf::atom("import")>;
using cluster_atom = caf::atom_constant<caf::atom("cluster")>;
using stream_atom = caf::atom_constant<caf::atom("stream")>;
using peek_atom = caf::atom_constant<caf::atom("peek")>;
using auth_atom = caf::atom_constant<caf::atom("auth")>;
using grant_atom = caf::atom_constant<caf::atom("grant")>;
using revoke_atom = caf::atom_constant<caf::atom("revoke")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;

// --- publishing --------------------------------------------------------------------------------

/// One message of a publish batch; `seq` is the channel's publish sequence number (0 = nobody
/// waits for this message's confirm).
struct publish_item {
  message_ptr msg;
  uint64_t seq = 0;
};

/// Messages from one channel of one connection. `origin` receives the confirms (may be null for
/// dead-lettered messages).
struct publish_batch {
  caf::actor origin;
  uint16_t channel = 0;
  std::vector<publish_item> items;
};

// --- consuming ---------------------------------------------------------------------------------

/// Where a stream consumer starts reading (AMQP's x-stream-offset, Channel.consumeStream).
struct stream_offset_spec {
  enum kind_t : uint8_t {
    unset,      // a group's consumer resumes after its committed offset; otherwise as `next`
    first,      // the oldest message retention kept
    last,       // the start of the newest segment (RabbitMQ's "last chunk")
    next,       // only messages appended from now on
    offset,     // `value` (the oldest kept when that one is gone; waits when it is ahead)
    timestamp,  // the first message appended at or after `value` (ms since the epoch)
  };
  kind_t kind = unset;
  int64_t value = 0;
};

/// What a client asks for with basic.consume / Channel.consume.
struct consume_request {
  std::string queue;
  std::string tag;  // empty: the broker names the consumer
  bool no_ack = false;
  bool exclusive = false;
  uint32_t prefetch = 0;  // 0: the channel's default
  int32_t priority = 0;   // x-priority: a queue serves its highest-priority consumers first
  stream_offset_spec offset = {};  // streams only: where to start
  std::string group = {};          // streams only: the consumer group (one committed offset)
  // Consumers not limited by acks (no-ack, or no prefetch): deliveries the queue may send
  // ahead of what the front door has handed over; 0 = unlimited_consumer_window.
  uint32_t window = 0;
};

struct consumer_spec {
  caf::actor connection;
  std::string connection_name;
  uint16_t channel = 0;
  std::string tag;
  bool no_ack = false;
  bool exclusive = false;
  uint32_t prefetch = 0;        // 0 = unlimited
  uint32_t initial_credit = 0;  // deliveries the queue may send before more credit arrives
  int32_t priority = 0;
  stream_offset_spec offset = {};  // streams only (consume_request)
  std::string group = {};
};

/// One message handed out by a queue; `delivery_id` names this hand-out (a redelivery gets a new
/// one), so a late ack for an earlier hand-out can never settle a later one.
struct queued_delivery {
  uint64_t delivery_id = 0;
  message_ptr msg;
  bool redelivered = false;
  int64_t stream_offset = -1;  // its offset, for a message of a stream
};

struct get_reply {
  bool found = false;
  queued_delivery delivery;
  uint32_t remaining = 0;
};

struct lookup_reply {
  bool found = false;
  std::string queue;
  std::string state;  // "ready" | "unacked"
  queued_delivery delivery;
};

// --- streams -----------------------------------------------------------------------------------

/// A consumer group of a stream: its durable committed offset and how far behind it is.
struct group_info {
  std::string group;
  int64_t committed = -1;  // the last offset the group is done with; -1 = none yet
  uint64_t lag = 0;        // messages of the stream after `committed`
  uint32_t consumers = 0;  // attached now
};

/// A request only streams take (Cap'n Proto commitOffset / listGroups / lookupOffset, warrenctl).
struct stream_command {
  enum op_t : uint8_t { commit, groups, read };
  op_t op = groups;
  std::string queue;
  std::string group;   // commit
  int64_t offset = 0;  // commit, read
};

/// Its answer: the stream's groups (commit: the one committed), or the message read.
struct stream_reply {
  std::vector<group_info> groups;
  bool found = false;
  queued_delivery delivery;
};

// --- listings ----------------------------------------------------------------------------------

struct exchange_info {
  std::string vhost;
  exchange_spec spec;
};

struct queue_info {
  std::string vhost;
  queue_spec spec;
  uint64_t ready = 0;
  uint64_t unacked = 0;
  uint32_t consumers = 0;
  traffic_counters traffic;
  uint64_t bytes_on_disk = 0;  // segment files of a durable queue
  uint32_t segments = 0;
  std::string unavailable;         // why the queue refuses all work; empty while it works
  std::string node;                // the cluster node it lives on (filled in by the vhost)
  uint64_t paged_out = 0;          // of `ready`, kept on disk only
  uint64_t memory_bytes = 0;       // held in memory: messages and the index of what is on disk
  bool stream = false;             // x-queue-type=stream: `ready` counts the messages of the log
  int64_t first_offset = -1;       // streams: the oldest offset kept; -1 while empty
  int64_t last_offset = -1;        // streams: the newest
  std::vector<group_info> groups;  // streams: their consumer groups
};

struct binding_info {
  std::string vhost;
  binding_spec spec;
};

struct consumer_info {
  std::string vhost;
  std::string queue;
  std::string tag;
  uint16_t channel = 0;
  std::string connection_name;
  bool no_ack = false;
  bool exclusive = false;
  uint32_t prefetch = 0;
  uint32_t unacked = 0;
};

struct connection_info {
  std::string name;
  std::string peer;
  std::string vhost;
  std::string user;
  uint32_t channels = 0;
  traffic_counters traffic;
};

/// One reading of the node's statistics: every queue of every vhost, every connection.
struct node_stats_info {
  uint64_t uptime_ms = 0;
  uint64_t rss_bytes = 0;     // resident memory of the process
  uint64_t memory_bytes = 0;  // counted for messages (memory_ledger), what the alarm judges
  std::vector<queue_info> queues;
  std::vector<connection_info> connections;
};

/// What the node tells every connection when it logs in.
struct connection_settings {
  /// A channel holding a delivery unacked this long is closed (406); 0 = never.
  int64_t consumer_timeout_ms = 30 * 60 * 1000;  // RabbitMQ's default
  /// Larger message bodies are refused with PRECONDITION_FAILED on both doors.
  uint64_t max_message_bytes = uint64_t{128} << 20;  // RabbitMQ's default max_message_size
  /// Channels a connection may have open at once.
  uint16_t channel_max = 2047;  // RabbitMQ's default
  /// Connections the node takes at once (logged in); 0 = no limit.
  uint32_t max_connections = 0;
};

/// Who a client says it is when it connects.
struct client_hello {
  std::string vhost;
  std::string user;
  std::string password;
  std::string client_name;
  std::string peer;
  bool loopback = false;  // the peer's address is a loopback one
  // The node's own management door acting for a user: not listed among connections, not
  // counted against connection limits.
  bool internal = false;
  // AMQP's rule: settling an unknown delivery tag closes the channel. The Cap'n Proto door
  // answers such a call with an error and leaves the channel open.
  bool bad_settle_closes_channel = true;
  // Logging in by a grant's token (its raw bytes) instead of user and password: the connection
  // may do what the grant allows, in the grant's vhost, as the user who granted it.
  std::string grant_token{};
  // A connection.update-secret: the user is checked to exist and to have access to the vhost,
  // not the password. A password is not a token that expires; RabbitMQ's internal users take
  // any new secret too.
  bool refresh = false;
};

// --- inspect -----------------------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, publish_item& x) {
  return f(x.msg, x.seq);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, publish_batch& x) {
  return f(x.origin, x.channel, x.items);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_offset_spec& x) {
  return f(x.kind, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queued_delivery& x) {
  return f(x.delivery_id, x.msg, x.redelivered, x.stream_offset);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_info& x) {
  return f(x.group, x.committed, x.lag, x.consumers);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_command& x) {
  return f(x.op, x.queue, x.group, x.offset);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_reply& x) {
  return f(x.groups, x.found, x.delivery);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_reply& x) {
  return f(x.found, x.delivery, x.remaining);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lookup_reply& x) {
  return f(x.found, x.queue, x.state, x.delivery);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, consume_request& x) {
  return f(x.queue, x.tag, x.no_ack, x.exclusive, x.prefetch, x.priority, x.offset, x.group,
           x.window);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, consumer_spec& x) {
  return f(x.connection, x.connection_name, x.channel, x.tag, x.no_ack, x.exclusive, x.prefetch,
           x.initial_credit, x.priority, x.offset, x.group);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exchange_info& x) {
  return f(x.vhost, x.spec);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_info& x) {
  return f(x.vhost, x.spec, x.ready, x.unacked, x.consumers, x.traffic, x.bytes_on_disk, x.segments,
           x.paged_out, x.memory_bytes, x.unavailable, x.node, x.stream, x.first_offset,
           x.last_offset, x.groups);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, binding_info& x) {
  return f(x.vhost, x.spec);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, consumer_info& x) {
  return f(x.vhost, x.queue, x.tag, x.channel, x.connection_name, x.no_ack, x.exclusive, x.prefetch,
           x.unacked);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, connection_info& x) {
  return f(x.name, x.peer, x.vhost, x.user, x.channels, x.traffic);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_stats_info& x) {
  return f(x.uptime_ms, x.rss_bytes, x.memory_bytes, x.queues, x.connections);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, connection_settings& x) {
  return f(x.consumer_timeout_ms, x.max_message_bytes, x.channel_max, x.max_connections);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, client_hello& x) {
  return f(x.vhost, x.user, x.password, x.client_name, x.peer, x.loopback, x.internal,
           x.bad_settle_closes_channel, x.grant_token, x.refresh);
}

}  // namespace warren
