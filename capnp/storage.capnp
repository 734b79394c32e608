# Warren's on-disk records: LMDB metadata values and the payload of segment records.
#
# Compatibility: fields may be added (Cap'n Proto keeps old readers working); a change that old
# readers cannot handle bumps FormatVersion.version, which a node refuses to open if newer than
# it knows.

@0xb3a604ae135a18d3;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("warren::storage");

using Broker = import "broker.capnp";

# LMDB "meta" database, key "format-version".
struct FormatVersion {
  version @0 :UInt32;
}

# LMDB "vhosts" database, key = vhost name.
struct VhostRecord {
  name @0 :Text;
  maxConnections @1 :Int64 = -1;   # RabbitMQ's vhost limits; negative = none
  maxQueues @2 :Int64 = -1;
}

# LMDB "users" database, key = user name. The password only as RabbitMQ's salted SHA-256 hash.
struct UserRecord {
  name @0 :Text;
  passwordHash @1 :Text;     # base64(salt ‖ sha256(salt ‖ password))
  tags @2 :List(Text);       # administrator, monitoring, management
}

# LMDB "grants" database, key = the hex SHA-256 of the grant's token (the token itself is never
# stored).
struct GrantRecord {
  tokenHash @0 :Text;
  tokenPrefix @1 :Text;      # the token's first 8 hex digits
  kind @2 :UInt8;            # 0 publisher, 1 consumer
  vhost @3 :Text;
  user @4 :Text;             # who granted it
  target @5 :Text;           # the exchange or queue
  keyPattern @6 :Text;       # publisher: the topic pattern routing keys must match; "" = any
  createdMs @7 :Int64;       # since the epoch
  expiresMs @8 :Int64;       # since the epoch; 0 = never
}

# LMDB "permissions" database, key = user NUL vhost: RabbitMQ's configure / write / read
# regular expressions.
struct PermissionRecord {
  user @0 :Text;
  vhost @1 :Text;
  configure @2 :Text;
  write @3 :Text;
  read @4 :Text;
}

# LMDB "members" database, key = node name: the other nodes of this node's cluster, so that it
# finds them again after a restart.
struct MemberRecord {
  name @0 :Text;
  address @1 :Text;          # HOST:PORT of its cluster listener
}

# LMDB "cluster" database, key "state": this node's standing in its cluster.
struct ClusterStateRecord {
  metadataVersion @0 :UInt64;  # changes to shared metadata (users, vhosts, permissions,
                               # exchanges, bindings) this node made or applied; members that
                               # meet compare them to see who is behind (cluster_actor.hpp)
}

# LMDB "streams" database, key = the stream's queue id (8 bytes, big-endian) then the group's
# name: the committed offset of one consumer group of a stream.
struct StreamOffsetRecord {
  queueId @0 :UInt64;
  group @1 :Text;
  offset @2 :Int64;            # the last offset the group is done with
  committedAt @3 :Int64;       # ms since the epoch
}

# LMDB "exchanges" database, key = vhost NUL name. Only durable exchanges are stored.
struct ExchangeRecord {
  vhost @0 :Text;
  name @1 :Text;
  type @2 :Text;              # direct | fanout | topic | headers
  autoDelete @3 :Bool;
  internal @4 :Bool;
  arguments @5 :List(Broker.Field);
}

# LMDB "queues" database, key = vhost NUL name. Only durable, non-exclusive queues are stored.
# Messages live in DATA_DIR/queues/<id>/, named by `id`, never by the queue's name.
# The same record, with `home` set and `id` 0, is a durable queue's entry in the cluster's
# metadata log ("queue_homes" database, same key): its name, its declaration and its node.
struct QueueRecord {
  vhost @0 :Text;
  name @1 :Text;
  id @2 :UInt64;
  autoDelete @3 :Bool;
  arguments @4 :List(Broker.Field);
  home @5 :Text;
}

# LMDB "bindings" database, key = vhost NUL exchange NUL queue NUL key NUL arguments
# (NUL "exchange" for a binding to an exchange). Stored when both ends are durable.
struct BindingRecord {
  vhost @0 :Text;
  exchange @1 :Text;
  queue @2 :Text;             # the destination: a queue, or an exchange when toExchange is set
  key @3 :Text;
  arguments @4 :List(Broker.Field);
  toExchange @5 :Bool;        # exchange.bind
}

# The payload of one segment record (see DESIGN §5 for the record header around it).
struct StoredMessage {
  seq @0 :UInt64;             # the message's place in its queue; ready order after recovery
  id @1 :Data;                # Warren's 16-byte message id
  exchange @2 :Text;
  routingKey @3 :Text;
  properties @4 :Broker.Properties;
  body @5 :Data;
}

# The cluster's metadata as a Raft log (persistence/metadata_fsm.hpp): each entry is one batch of
# LMDB changes, applied in log order on every member; none of them when a condition fails.
struct MetadataBatch {
  mutations @0 :List(MetadataMutation);
  conditions @1 :List(MetadataCondition);
  # The log's first state: the mutations replace every record of the tables the log carries,
  # unless a seed was applied before (then nothing changes).
  seed @2 :Bool;
}

# A key that must be present, or absent, when the entry is applied.
struct MetadataCondition {
  table @0 :UInt8;  # persistence::meta_table
  key @1 :Data;
  present @2 :Bool;
  prefix @3 :Bool;  # any of the log's records whose key starts with `key`
}

struct MetadataMutation {
  table @0 :UInt8;  # persistence::meta_table
  key @1 :Data;
  value @2 :Data;
  erase @3 :Bool;
}

# A snapshot of that state: every record, and the last log index applied to it.
struct MetadataSnapshot {
  appliedIndex @0 :UInt64;
  records @1 :List(MetadataMutation);
  seeded @2 :Bool;  # a seed entry was applied
}
