# Warren client API (Cap'n Proto RPC): the records the broker lists, exports and takes in.
#
# broker.capnp imports this file; the two together are the contract (see broker.capnp for
# connecting, errors, flow control and every call). These are plain data: tables of fields,
# and what Connection and Channel list (exchanges, queues, bindings, consumers, connections,
# cluster nodes, grants, users, permissions) or export and import (definitions). NULL MEANS
# EMPTY (broker.capnp) holds here too.

@0xcd0b8747c7c869b2;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("warren::rpc");

# A typed value in a header table or an argument table (a subset of AMQP field values).
struct Value {
  union {
    none @0 :Void;
    bool @1 :Bool;
    int @2 :Int64;
    float @3 :Float64;
    text @4 :Text;
    bytes @5 :Data;
    table @6 :List(Field);    # nested, as AMQP field tables nest
    array @7 :List(Value);
  }
  amqpType @8 :UInt8;         # the AMQP field type letter the value was published with (ASCII:
                              # b B s u I i l L T as int, f d as float, D as int), 0 when none;
                              # an AMQP consumer gets the value back in that type
  scale @9 :UInt8;            # amqpType D (decimal): int holds the unscaled digits, the value
                              # is int / 10^scale
}

# One entry of a table (message headers, queue / exchange / binding arguments).
struct Field {
  key @0 :Text;
  value @1 :Value;
}

# A consumer group of a stream.
struct GroupInfo {
  group @0 :Text;
  committedOffset @1 :Int64;  # the last offset the group is done with; -1 = none yet
  lag @2 :UInt64;             # messages of the stream after the committed offset
  consumers @3 :UInt32;       # attached now
}

struct ExchangeInfo {
  name @0 :Text;
  vhost @1 :Text;
  type @2 :Text;
  durable @3 :Bool;
  autoDelete @4 :Bool;
  internal @5 :Bool;
  arguments @6 :List(Field);
}

struct QueueInfo {
  name @0 :Text;
  vhost @1 :Text;
  durable @2 :Bool;
  exclusive @3 :Bool;
  autoDelete @4 :Bool;
  arguments @5 :List(Field);
  messagesReady @6 :UInt64;
  messagesUnacked @7 :UInt64;
  consumers @8 :UInt32;
  traffic @9 :Traffic;
  bytesOnDisk @10 :UInt64;     # segment files of a durable queue
  segments @11 :UInt32;
  unavailable @12 :Text;       # empty while the queue works; otherwise why it cannot (its files
                               # could not be loaded, its node is down): it then refuses all work
  node @13 :Text;              # the cluster node it lives on
  messagesPagedOut @14 :UInt64;  # of messagesReady, those kept on disk only (past the queue's
                                 # memory budget), read back as consumers need them
  memory @15 :UInt64;          # bytes the queue holds in memory: its messages (bodies and a
                               # fixed overhead each) and its index of what is on disk
  type @16 :Text;              # "classic" or "stream"
  firstOffset @17 :Int64 = -1; # a stream's oldest and newest offsets; -1 while it is empty (and
  lastOffset @18 :Int64 = -1;  # for classic queues). messagesReady counts a stream's messages.
  groups @19 :List(GroupInfo); # a stream's consumer groups
}

# Counters since the queue or connection began; they only grow. Rates are the difference of two
# readings divided by the time between them (warrenctl stats does that).
struct Traffic {
  published @0 :UInt64;        # messages taken in: enqueued (queue), published (connection)
  delivered @1 :UInt64;        # messages handed out, by push or by get
  acked @2 :UInt64;            # deliveries settled by a positive ack
  redelivered @3 :UInt64;      # deliveries marked redelivered
  bytesIn @4 :UInt64;          # body bytes
  bytesOut @5 :UInt64;
}

# One reading of the node's statistics.
struct NodeStats {
  uptimeMs @0 :UInt64;
  rssBytes @1 :UInt64;         # resident memory of the node process
  queues @2 :List(QueueInfo);  # every vhost
  connections @3 :List(ConnectionInfo);
  memoryBytes @4 :UInt64;      # memory the node counts for messages (what queues hold in memory
                               # and their indexes of what is on disk): what the memory alarm
                               # compares with its limit
}

struct BindingInfo {
  vhost @0 :Text;
  exchange @1 :Text;
  queue @2 :Text;          # the destination: a queue, or an exchange when toExchange is set
  key @3 :Text;
  arguments @4 :List(Field);
  toExchange @5 :Bool;     # an exchange-to-exchange binding (AMQP exchange.bind)
}

struct ConsumerInfo {
  vhost @0 :Text;
  queue @1 :Text;
  consumerTag @2 :Text;
  channel @3 :UInt16;
  connection @4 :Text;        # client name of the connection
  noAck @5 :Bool;
  exclusive @6 :Bool;
  prefetch @7 :UInt32;
  unacked @8 :UInt32;
}

struct ConnectionInfo {
  name @0 :Text;              # the client name given to `connect`
  peer @1 :Text;              # remote address
  vhost @2 :Text;
  user @3 :Text;
  channels @4 :UInt32;
  traffic @5 :Traffic;
}

# A node of the cluster (Connection.listNodes).
struct NodeInfo {
  name @0 :Text;              # unique in the cluster: warren@HOST:CLUSTER_PORT unless named
  address @1 :Text;           # HOST:PORT of its cluster listener; empty when standalone
  running @2 :Bool;           # reachable from the answering node
  local @3 :Bool;             # the answering node itself
  queues @4 :UInt32;          # queues that live on it (0 while it is down)
  # The cluster's metadata log, as the answering node sees it: the node holds a log, votes in
  # its configuration, leads it.
  metadataLog @5 :Bool;
  voter @6 :Bool;
  leader @7 :Bool;
  # The last log index the answering node applied (its own row only; 0 without a log).
  metadataLogApplied @8 :UInt64;
}

# A grant as Connection.listGrants shows it (never its token).
struct GrantInfo {
  tokenPrefix @0 :Text;        # the token's first 8 hex digits: enough to revoke it
  kind @1 :GrantKind;
  vhost @2 :Text;
  user @3 :Text;               # who made it
  target @4 :Text;             # the exchange or queue
  routingKeyPattern @5 :Text;  # publishers: what routing keys must match ("" = any)
  createdAt @6 :Int64;         # milliseconds since the epoch
  expiresAt @7 :Int64;         # milliseconds since the epoch; 0 = never
}

enum GrantKind {
  publisher @0;
  consumer @1;
}

struct Definitions {
  users @0 :List(UserDefinition);
  vhosts @1 :List(VhostDefinition);
  permissions @2 :List(PermissionInfo);
  exchanges @3 :List(ExchangeInfo);
  queues @4 :List(QueueInfo);        # only the declaration fields are used
  bindings @5 :List(BindingInfo);
}

struct UserDefinition {
  name @0 :Text;
  passwordHash @1 :Text;             # base64(salt ++ sha256(salt ++ password)), RabbitMQ's format
  tags @2 :List(Text);
}

struct VhostDefinition {
  name @0 :Text;
  maxConnections @1 :Int64;          # negative = none
  maxQueues @2 :Int64;
}

struct PermissionInfo {
  user @0 :Text;
  vhost @1 :Text;
  configure @2 :Text;
  write @3 :Text;
  read @4 :Text;
}

struct UserInfo {
  name @0 :Text;
  tags @1 :List(Text);
}
