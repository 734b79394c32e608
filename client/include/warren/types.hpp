// Plain types of the client API: what you publish, what you receive, what listings return.
#pragma once

#include "core/declarations.hpp"
#include "core/message.hpp"
#include "core/message_id.hpp"
#include "core/outcomes.hpp"
#include "core/traffic.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace warren::client {

using warren::definitions;
using warren::field;
using warren::field_table;
using warren::field_value;
using warren::message_id;
using warren::message_properties;
using warren::permission_record;
using warren::traffic_counters;
using warren::user_record;
using warren::vhost_limits;

struct outbound_message {
  std::string exchange;  // "" = default exchange (routing key = queue name)
  std::string routing_key;
  std::string body;
  message_properties properties;
  bool mandatory = false;
};

using warren::publish_outcome;
using warren::to_string;

struct publish_result {
  message_id id;
  publish_outcome outcome = publish_outcome::routed;
};

struct delivery {
  uint64_t delivery_tag = 0;
  std::string consumer_tag;
  bool redelivered = false;
  std::string exchange;
  std::string routing_key;
  message_id id;
  message_properties properties;
  std::string body;
  uint32_t message_count = 0;  // get only
  int64_t stream_offset = -1;  // a stream's message: its offset
};

/// Where a stream consumer starts (channel::consume_stream).
struct stream_offset {
  enum kind_t { unset, first, last, next, offset, timestamp };
  kind_t kind = unset;  // unset: after its group's committed offset, or as next
  int64_t value = 0;    // offset: the offset; timestamp: ms since the epoch

  static stream_offset at(int64_t offset) { return {stream_offset::offset, offset}; }
  static stream_offset since(int64_t ms) { return {stream_offset::timestamp, ms}; }
};

/// A consumer group of a stream.
struct group_row {
  std::string group;
  int64_t committed_offset = -1;  // the last offset the group is done with; -1 = none
  uint64_t lag = 0;               // messages of the stream after it
  uint32_t consumers = 0;
};

struct lookup_result {
  std::string queue;
  std::string state;  // "ready" | "unacked"
  delivery message;
};

struct exchange_options {
  bool durable = false;
  bool auto_delete = false;
  bool internal = false;
  bool passive = false;
  field_table arguments;
};

struct queue_options {
  bool durable = false;
  bool exclusive = false;
  bool auto_delete = false;
  bool passive = false;
  field_table arguments;
  std::string node;  // in a cluster: the node to create a new queue on (empty: the connected one)
};

struct declare_ok {
  std::string name;
  uint32_t message_count = 0;
  uint32_t consumer_count = 0;
};

struct consume_options {
  std::string tag;  // empty: the broker generates one
  bool no_ack = false;
  bool exclusive = false;
  uint32_t prefetch = 0;  // 0: the channel's qos value
  int32_t priority = 0;   // the queue serves higher-priority consumers first (x-priority)
  // The delivery window (broker.capnp, DeliveryWindow): deliver calls the broker keeps
  // outstanding (1-64) and messages per call (1-10000); 0 = the broker's default (4 and 256).
  // A call returns once the callbacks of all its messages ran.
  uint32_t max_calls = 0;
  uint32_t max_batch = 0;
};

struct exchange_row {
  std::string name, vhost, type;
  bool durable = false, auto_delete = false, internal = false;
  field_table arguments;
};

struct queue_row {
  std::string name, vhost;
  bool durable = false, exclusive = false, auto_delete = false;
  field_table arguments;
  uint64_t messages_ready = 0, messages_unacked = 0;
  uint32_t consumers = 0;
  traffic_counters traffic;
  uint64_t bytes_on_disk = 0;
  uint32_t segments = 0;
  std::string unavailable;          // why the queue refuses all work (its files, its node down)
  std::string node;                 // the cluster node it lives on
  uint64_t messages_paged_out = 0;  // of messages_ready, kept on disk only
  uint64_t memory = 0;              // bytes the queue holds in memory
  std::string type = "classic";     // or "stream"
  int64_t first_offset = -1, last_offset = -1;  // a stream's; -1 while empty
  std::vector<group_row> groups;                // a stream's consumer groups
};

struct binding_row {
  std::string vhost, exchange, queue, key;  // queue: the destination, a queue or an exchange
  field_table arguments;
  bool to_exchange = false;
};

struct consumer_row {
  std::string vhost, queue, consumer_tag, connection;
  uint16_t channel = 0;
  bool no_ack = false, exclusive = false;
  uint32_t prefetch = 0, unacked = 0;
};

struct connection_row {
  std::string name, peer, vhost, user;
  uint32_t channels = 0;
  traffic_counters traffic;
};

/// A capability grant as connection::list_grants shows it (never its token).
struct grant_row {
  std::string token_prefix;  // the token's first 8 hex digits: enough to revoke the grant
  std::string kind;          // "publisher" or "consumer"
  std::string vhost;
  std::string user;                 // who made it
  std::string target;               // the exchange or queue
  std::string routing_key_pattern;  // publishers: what routing keys must match; empty = any
  int64_t created_at_ms = 0;        // since the epoch
  int64_t expires_at_ms = 0;        // since the epoch; 0 = never
};

/// A node of the cluster (connection::list_nodes).
struct node_row {
  std::string name, address;  // address: HOST:PORT of its cluster listener, empty standalone
  bool running = false;
  bool local = false;  // the node this connection is connected to
  uint32_t queues = 0;
  // The cluster's metadata log as the connected node sees it: holds a log, votes, leads.
  bool metadata_log = false;
  bool voter = false;
  bool leader = false;
  uint64_t metadata_log_applied = 0;  // the last index it applied: the connected node's row only
};

/// One reading of the node's statistics (connection::node_stats).
struct node_stats {
  uint64_t uptime_ms = 0;
  uint64_t rss_bytes = 0;
  uint64_t memory_bytes = 0;      // counted for messages; what the memory alarm judges
  std::vector<queue_row> queues;  // every vhost
  std::vector<connection_row> connections;
};

}  // namespace warren::client
