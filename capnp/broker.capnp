# Warren client API (Cap'n Proto RPC).
#
# This file, with broker_records.capnp beside it, is the whole contract: a client in any language
# with a Cap'n Proto RPC library can be written from the two. Nothing here depends on Warren's
# own C++ client.
#
# CONNECTING. A client dials the node (default port 5680), takes the bootstrap capability
# `Broker`, calls `connect` and opens channels on the returned `Connection`. Thanks to promise
# pipelining, `connect`, `openChannel` and a first declare can go out in one network round trip.
# Until `connect` succeeds the node reads messages of at most 64 KiB. After it, a message body
# may be as large as the node's --max-message-size (128 MiB unless set), and one call about
# twice that.
#
# NULL MEANS EMPTY. Every unset pointer field, in parameters and in structs, means its empty
# value: an unset Text is "", an unset Data is no bytes, an unset List has no elements, an unset
# `Properties` has every property unset (not persistent, no headers), an unset `StreamOffset` is
# `unset`, an unset `DeliveryWindow` takes the defaults. Clients never need to set a field only
# to make it empty, and the broker may leave empty fields of its answers unset.
#
# ERRORS. A call the broker refuses fails with a Cap'n Proto exception of type `failed` whose
# description is, exactly,
#
#     CODE: text
#
# where CODE is one of the `ErrorCode` names below written in upper snake case (notFound is
# NOT_FOUND, the name AMQP gives reply code 404) and text says in English what was wrong, naming
# the object ("NOT_FOUND: no queue 'orders' in vhost '/'"). CODE never contains ": ", so
# splitting the description at its first ": " gives both parts. Some Cap'n Proto runtimes put
# their own prefix ahead of a description that came over the network (C++ adds "remote
# exception: "); remove it first. CODEs are stable; texts may change. An exception of type
# `disconnected` means the network connection went away: every capability of it is dead, and
# the node closed the connection as if `Connection.close` had been called.
#
# WHAT AN ERROR CLOSES. A call that fails with NOT_FOUND, ACCESS_REFUSED, RESOURCE_LOCKED or
# PRECONDITION_FAILED closes its channel, as in AMQP: later calls on it fail with CHANNEL_ERROR,
# and its consumers get `cancelled`. Two kinds of failure are exceptions and fail the call
# alone: settling an unknown delivery tag (see `ack`), and a parameter refused before the call
# reaches the channel (a DeliveryWindow past its limits, a peek count out of range, a message
# id that is not 16 bytes). CONNECTION_FORCED and failures of `connect` end the connection. The
# other codes fail the call alone.
#
# FLOW CONTROL, PUBLISHING. A publish or publishBatch call returns when every queue its
# messages were routed to has taken them; in confirm mode, when they are safe (persistent
# messages to durable queues: on disk). The reply is the publisher's credit: the broker reads
# calls as fast as they come, and it is the client that bounds its calls in flight. The rule:
# keep 4 to 8 calls in flight per channel, of 100 to 5000 messages and at most a few MiB each,
# and send the next call when the oldest returns. Measured on a two-core machine, one publisher,
# 64-byte messages to one queue, in confirm mode (messages/s):
#
#     messages per call    1 call in flight    2        4        8        16
#     100                  236k                352k     521k     623k     579k
#     1000                 548k                698k     805k     717k     779k
#     5000                 598k                846k     950k     919k     856k
#
# One call at a time wastes a round trip per call; past 4 to 8, calls only wait longer. While
# the node's memory or disk alarm is raised, publish calls are not answered until it clears, so
# a client that waits for its replies stops by itself.
#
# PAST THE RULE. The node stops reading a connection while its calls that have not returned add
# up to more than 64 MiB (Cap'n Proto's flow limit), and reads on as they return. While stopped
# it reads nothing of that connection, returns of `deliver` calls included, so a connection that
# both publishes and consumes must keep its publish calls in flight well under that.
#
# FLOW CONTROL, CONSUMING. See `DeliveryWindow` and `Consumer.deliver`: a consumer has at most
# `maxCalls` deliver calls outstanding of at most `maxBatch` deliveries each; a consumer with a
# prefetch also has at most `prefetch` deliveries unacknowledged. Acks (and every other call)
# may be sent from inside `deliver`, before it returns; they do not wait for it.
#
# SIZES. A `deliver` call carries about 1 MiB of message bodies, or one larger message alone.
# Cap'n Proto readers refuse messages past a traversal limit (64 MiB by default in most
# languages, capnp-rust among them), so a client taking messages over about 60 MiB must raise
# its limit above its largest message. The node's own limit is set from --max-message-size.
#
# DROPPING A CAPABILITY is meaningful: when a client releases its `Connection` (or its network
# connection goes away) the broker closes the connection, cancels its consumers and returns every
# unacknowledged message to its queue with `redelivered = true`. Releasing a `Channel` closes it.

@0xe9125ff60f41049c;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("warren::rpc");

# Records (tables of fields, listings, definitions): broker_records.capnp.
using Field = import "broker_records.capnp".Field;
using GroupInfo = import "broker_records.capnp".GroupInfo;
using ExchangeInfo = import "broker_records.capnp".ExchangeInfo;
using QueueInfo = import "broker_records.capnp".QueueInfo;
using NodeStats = import "broker_records.capnp".NodeStats;
using BindingInfo = import "broker_records.capnp".BindingInfo;
using ConsumerInfo = import "broker_records.capnp".ConsumerInfo;
using ConnectionInfo = import "broker_records.capnp".ConnectionInfo;
using NodeInfo = import "broker_records.capnp".NodeInfo;
using GrantInfo = import "broker_records.capnp".GrantInfo;
using Definitions = import "broker_records.capnp".Definitions;
using PermissionInfo = import "broker_records.capnp".PermissionInfo;
using UserInfo = import "broker_records.capnp".UserInfo;

# What a refused call failed with: the CODE of its "CODE: text" description (see ERRORS above),
# here in camel case. Each is AMQP's reply code of the same name, whose number is given.
enum ErrorCode {
  internalError @0;       # 541: the broker could not carry it out (a bug, a failed disk write)
  connectionForced @1;    # 320: the broker closed the connection (shutting down, node lost)
  accessRefused @2;       # 403: wrong credentials, or the user lacks the permission named
  notFound @3;            # 404: the vhost, exchange or queue named does not exist
  resourceLocked @4;      # 405: an exclusive queue or consumer of another connection
  preconditionFailed @5;  # 406: it conflicts with what exists (an inequivalent redeclare, a
                          # non-empty queue with ifEmpty, an unknown delivery tag, ...)
  frameError @6;          # 501: AMQP only
  syntaxError @7;         # 502: a malformed value (a message id not 16 bytes long, ...)
  commandInvalid @8;      # 503: an argument of the wrong kind (an unknown exchange type, ...)
  channelError @9;        # 504: the channel is closed (an earlier error closed it)
  unexpectedFrame @10;    # 505: AMQP only
  resourceError @11;      # 506: a limit of the node or connection was reached
  notAllowed @12;         # 530: refused by a limit (vhost connections, a consumer tag in use)
  notImplemented @13;     # 540: a feature the broker does not have
  noRoute @14;            # 312: never an error here (see PublishResult.returned); listed
                          # because AMQP clients meet it
}

# Message properties, as in AMQP's basic class. Unset fields are empty (see NULL MEANS EMPTY).
struct Properties {
  persistent @0 :Bool;        # delivery_mode 2; stored on disk when its queue is durable
  contentType @1 :Text;
  contentEncoding @2 :Text;
  headers @3 :List(Field);    # routed on by headers exchanges
  priority @4 :UInt8;
  correlationId @5 :Text;
  replyTo @6 :Text;
  expiration @7 :Text;        # per-message TTL in milliseconds, as decimal text
  messageId @8 :Text;         # the application's own id; Warren's id is separate (see Delivery)
  timestamp @9 :Int64;        # seconds since the epoch, 0 = unset
  type @10 :Text;
  userId @11 :Text;
  appId @12 :Text;
  setToDefault @13 :UInt16;
  # Which properties the publisher set to their default value (delivery mode 1, priority 0,
  # timestamp 0, empty text or headers), as AMQP 0-9-1's property flag bits: contentType 0x8000,
  # contentEncoding 0x4000, headers 0x2000, deliveryMode 0x1000, priority 0x0800, correlationId
  # 0x0400, replyTo 0x0200, expiration 0x0100, messageId 0x0080, timestamp 0x0040, type 0x0020,
  # userId 0x0010, appId 0x0008. A property with any other value is present anyway. AMQP
  # consumers get back exactly the properties an AMQP publisher set; 0 for everything else.
}

# A message as the publisher hands it over.
struct OutboundMessage {
  exchange @0 :Text;          # "" is the default exchange: routing key = queue name
  routingKey @1 :Text;        # at most 255 bytes, no control characters
  mandatory @2 :Bool;         # if no queue takes it, report `returned` instead of dropping silently
  properties @3 :Properties;
  body @4 :Data;
}

# What became of one published message.
struct PublishResult {
  id @0 :Data;                # Warren's 16-byte message id (8 random bytes + 8-byte sequence)
  outcome @1 :Outcome;
  enum Outcome {
    routed @0;                # every queue it was routed to has taken it (in confirm mode: the confirm)
    returned @1;              # mandatory and no queue matched: returned to the publisher (NO_ROUTE 312)
    dropped @2;               # not mandatory and no queue matched
    rejected @3;              # a queue refused it (e.g. x-overflow reject-publish): a negative confirm
  }
}

# A message handed to a consumer or returned by `get`.
struct Delivery {
  deliveryTag @0 :UInt64;     # per channel, increasing from 1; 0 for no-ack deliveries of `get`
  consumerTag @1 :Text;       # empty for `get`
  redelivered @2 :Bool;       # it may have been seen before (requeued, or its consumer went away)
  exchange @3 :Text;
  routingKey @4 :Text;
  messageId @5 :Data;         # Warren's 16-byte id
  properties @6 :Properties;
  body @7 :Data;
  messageCount @8 :UInt32;    # `get` only: messages still ready in the queue after this one
  streamOffset @9 :Int64 = -1;  # a stream's message: its offset; -1 for other queues
}

# Where a stream consumer starts (Channel.consumeStream).
struct StreamOffset {
  union {
    unset @0 :Void;           # in a group: after the group's committed offset (or as `next`
                              # when it has none); without a group: as `next`
    first @1 :Void;           # the oldest message retention kept
    last @2 :Void;            # the start of the newest segment (RabbitMQ's "last chunk")
    next @3 :Void;            # only messages appended from now on
    offset @4 :UInt64;        # this offset (the oldest kept, if retention removed it; a consumer
                              # ahead of the end waits for it)
    timestamp @5 :Int64;      # the first message appended at or after this time (ms since epoch)
  }
}

# How a consumer's deliveries are cut into `Consumer.deliver` calls (Channel.consume).
#
# The broker sends a consumer at most `maxCalls` deliver calls that have not returned, each of
# at most `maxBatch` deliveries and at most 1 MiB of bodies (a bigger message goes alone in its
# call). Deliveries that do not fit wait in the broker, in order, and go out as calls return.
# What else bounds them depends on the consumer:
#
# - Acknowledging with a prefetch (`noAck` false, prefetch P > 0 from `consume` or `qos`): at
#   most P deliveries are unacknowledged, counting those in calls and those waiting. An ack
#   (or nack, reject) lets the queue send as many more. A call's return does not.
# - No prefetch, or `noAck`: the queue hands the consumer at most maxCalls * maxBatch
#   deliveries that have not yet been delivered in a returned call; each returned call lets it
#   send as many more as the call carried. Acks do not (with noAck there are none).
#
# So a consumer that returns from `deliver` only when it has handled the deliveries has at most
# maxCalls * maxBatch messages on its side, and a slow consumer slows its queue, not the broker's
# memory. Each call holds as many deliveries as are waiting, up to maxBatch: with few messages
# flowing, calls carry one or two; under load they fill up.
#
# What it costs, measured on a two-core machine (one publisher, one noAck consumer returning at
# once, 64-byte messages, deliveries/s): 1 call of 1 delivery, 5k (a round trip per message);
# 1 of 256, 244k; 4 of 256 (the default), 350k; 4 of 1000, 429k. Larger windows only hold more
# messages on the consumer's side.
struct DeliveryWindow {
  maxCalls @0 :UInt32;        # 1-64; 0 (or unset) = 4
  maxBatch @1 :UInt32;        # 1-10000; 0 (or unset) = 256
}

# The client's receiving end of a subscription, passed to `Channel.consume`.
interface Consumer {
  # Deliveries for this consumer, in queue order (see DeliveryWindow for how many per call and
  # how many calls at once). Return once they are handled, or at least taken in: the return is
  # what lets the next call go. Calls come in order; a client may handle them one at a time.
  #
  # Throwing from `deliver` (any exception but a lost connection) ends the subscription: the
  # broker cancels the consumer, returns its unacknowledged deliveries (those of the failed call,
  # of calls still out, and of any waiting) to the queue marked `redelivered`, logs the
  # consumer's tag and the exception's description, and calls `cancelled` with reason
  # "deliver failed: " followed by that description. Deliveries of a noAck consumer are not
  # returned: they counted as delivered when they left the queue. The channel stays open.
  deliver @0 (deliveries :List(Delivery)) -> ();

  # The broker ended the subscription: its queue was deleted, its channel closed (the reason
  # then starts "channel closed: "), its queue's node went down, or a `deliver` failed. Not
  # called after the client's own `cancel`. Nothing is delivered to this consumer after it.
  cancelled @1 (consumerTag :Text, reason :Text);
}

# The bootstrap capability.
interface Broker {
  # Opens a connection to a virtual host. Fails with NOT_FOUND for an unknown vhost and
  # ACCESS_REFUSED for bad credentials. There is no default user: an empty `user` is refused
  # with ACCESS_REFUSED ("login refused: the user name is empty"). `guest` may connect from a
  # loopback address only. The connection counts toward the vhost's and the node's connection
  # limits (NOT_ALLOWED when one is reached).
  connect @0 (vhost :Text, user :Text, password :Text, clientName :Text)
      -> (connection :Connection);

  # Opens what a grant's token stands for (see CAPABILITY GRANTS), with no user name or
  # password: a `Publisher` or a `QueueConsumer`, each its own connection to the node, in the
  # grant's vhost. ACCESS_REFUSED for a token no grant has (never made, revoked or expired;
  # a token is 32 bytes, and any other length is no grant's), and for a grant whose creator no
  # longer exists or may no longer do what it grants. Each restore is a connection and counts
  # toward the vhost's and the node's connection limits, as `connect` does.
  restore @1 (token :Data) -> (granted :Granted);

  # As `restore`, for a token known to be a publisher's or a consumer's: these return the
  # capability itself, so that generated code can pipeline on it (some languages make no
  # pipeline getters for union members, as `Granted` is). A token of the other kind is
  # PRECONDITION_FAILED, naming its kind.
  restorePublisher @2 (token :Data) -> (publisher :Publisher);
  restoreConsumer @3 (token :Data) -> (consumer :QueueConsumer);
}

# What Broker.restore returns: the capability of the token's kind.
struct Granted {
  union {
    publisher @0 :Publisher;
    consumer @1 :QueueConsumer;
  }
}

# CAPABILITY GRANTS. A connection can hand out the right to publish to one exchange, or to
# consume one queue, without handing out credentials: `Connection.grantPublisher` and
# `grantConsumer` make a grant and return its capability. The grant is stored on the node (only
# a SHA-256 of its token), so the capability can be saved as a token (`save`), given to another
# process and opened there with `Broker.restore`; every restore of a token is the same grant.
#
# - A grant needs its creator to have the permission it grants (write on the exchange, read on
#   the queue) when it is made and whenever it is restored. It acts as its creator: listings
#   show its connections under the creator's name.
# - A grant's capability is its own connection to the node: it outlives the connection that
#   made it, and releasing it closes only itself (requeueing what its consumers had not acked).
# - A grant ends when revoked (`Connection.revokeGrant`, by its creator or an administrator) or
#   when its time to live runs out. Then its connections close: calls on its capabilities fail
#   with CONNECTION_FORCED ("grant ... revoked by 'alice'", "... expired"), its consumers get
#   `cancelled` with that reason, and restoring its token fails with ACCESS_REFUSED.
# - Grants belong to the node that made them (a token restored on another member of a cluster
#   is unknown there).
# - A grant's target need not exist yet; using it fails with NOT_FOUND until it does.
# - No refusal ends a grant's capability. A refused call fails alone, with the codes of Channel;
#   one that would close a channel (NOT_FOUND, ACCESS_REFUSED, PRECONDITION_FAILED,
#   RESOURCE_LOCKED) closes the capability's hidden channel, whose consumers are cancelled and
#   whose unacked deliveries go back to the queue, and the next call opens it again. Calls
#   already in flight when it closed may fail with CHANNEL_ERROR; sent again, they work.

# The right to publish to one exchange. Calls are in confirm mode: they return once the
# messages are safe (persistent messages in durable queues: on disk).
interface Publisher {
  # As Channel.publish / publishBatch. A message's `exchange` must be empty or the granted
  # exchange, and either way it goes to the granted exchange: here "" does not mean the default
  # exchange (as it does for Channel) unless the grant is on the default exchange "". Its routing
  # key must match the grant's pattern. Otherwise the call fails with ACCESS_REFUSED naming the
  # first message refused, and none of the call's messages is published.
  publish @0 (message :OutboundMessage) -> (result :PublishResult);
  publishBatch @1 (messages :List(OutboundMessage)) -> (results :List(PublishResult));

  # The grant's token, to give to another process (Broker.restore).
  save @2 () -> (token :Data);

  # What the grant allows (its exchange, pattern and expiry).
  info @3 () -> (grant :GrantInfo);
}

# The right to consume one queue, and to settle what it delivers. The methods are those of
# Channel, on a channel of the capability's own, with the queue fixed by the grant. On a stream,
# `consume` starts at the next message, as Channel.consume does; `consumeStream` starts at an
# offset.
interface QueueConsumer {
  consume @0 (consumerTag :Text, noAck :Bool, prefetch :UInt32, consumer :Consumer,
              priority :Int32, window :DeliveryWindow) -> (consumerTag :Text);
  cancel @1 (consumerTag :Text) -> ();
  get @2 (noAck :Bool) -> (result :Channel.GetResult);
  ack @3 (deliveryTag :UInt64, multiple :Bool) -> ();
  ackEach @4 (deliveryTags :List(UInt64)) -> ();
  nack @5 (deliveryTag :UInt64, multiple :Bool, requeue :Bool) -> ();
  reject @6 (deliveryTag :UInt64, requeue :Bool) -> ();

  # The grant's token, to give to another process (Broker.restore).
  save @7 () -> (token :Data);

  # What the grant allows (its queue and expiry).
  info @8 () -> (grant :GrantInfo);

  # As Channel.consumeStream, on the granted queue, without a group: a group's committed offset
  # is its grantor's to move, so a `group` is ACCESS_REFUSED.
  consumeStream @9 (consumerTag :Text, offset :StreamOffset, group :Text, prefetch :UInt32,
                    consumer :Consumer, window :DeliveryWindow) -> (consumerTag :Text);
}

interface Connection {
  openChannel @0 () -> (channel :Channel);

  # Closes every channel (requeueing unacked messages, cancelling consumers, deleting this
  # connection's exclusive queues) and then the connection.
  close @1 ();

  # Administration. Lists are of this connection's vhost unless said otherwise.
  addVhost @2 (name :Text);                      # idempotent
  deleteVhost @3 (name :Text);                   # deletes everything in it; "/" included
  listVhosts @4 () -> (names :List(Text));
  listExchanges @5 () -> (exchanges :List(ExchangeInfo));
  listQueues @6 () -> (queues :List(QueueInfo));
  listBindings @7 () -> (bindings :List(BindingInfo));
  listConsumers @8 () -> (consumers :List(ConsumerInfo));
  listConnections @9 () -> (connections :List(ConnectionInfo));   # of every vhost

  # Counters of every queue and connection of the node, with its uptime and memory.
  nodeStats @10 () -> (stats :NodeStats);

  # RabbitMQ's per-vhost limits (negative = none): connections past maxConnections are refused
  # with NOT_ALLOWED, queue declares past maxQueues with PRECONDITION_FAILED. Setting them
  # replaces both; they are stored and survive restarts.
  setVhostLimits @11 (name :Text, maxConnections :Int64, maxQueues :Int64);
  vhostLimits @12 (name :Text) -> (maxConnections :Int64, maxQueues :Int64);

  # Users, as RabbitMQ keeps them: passwords stored only as salted SHA-256 hashes, and tags
  # (administrator, monitoring, management). These, and adding or deleting vhosts and setting
  # their limits, need a user tagged administrator (ACCESS_REFUSED otherwise).
  addUser @13 (name :Text, password :Text, tags :List(Text));   # PRECONDITION_FAILED if it exists
  changePassword @14 (name :Text, password :Text);
  deleteUser @15 (name :Text);
  listUsers @16 () -> (users :List(UserInfo));

  # Permissions, as RabbitMQ's: three regular expressions over resource names (searched; an
  # empty one matches nothing). A user needs an entry for a vhost to connect to it; declare and
  # delete need configure, publish needs write on the exchange ("amq.default" for the default
  # one), consume, get and purge need read on the queue, and a binding needs write on its
  # destination and read on its source. Administrator only. A connection keeps the permissions
  # it logged in with.
  setPermissions @17 (user :Text, vhost :Text, configure :Text, write :Text, read :Text);
  clearPermissions @18 (user :Text, vhost :Text);
  listPermissions @19 () -> (permissions :List(PermissionInfo));

  # The node's setup, as RabbitMQ's definitions file holds it (administrator only): every user
  # with its password hash, every vhost with its limits, every permission, and the durable
  # exchanges (not the built-in ones), the durable non-exclusive queues and the bindings between
  # them, of every vhost.
  exportDefinitions @20 () -> (definitions :Definitions);

  # Applies definitions (administrator only), as RabbitMQ's import does: users are added or
  # replaced (hash and tags), vhosts added and their limits set, permissions set, then
  # exchanges, queues and bindings declared in that order. Everything is checked before the
  # first change (names, patterns, hashes, exchange types, and that what is referred to is
  # there or defined alongside): a failed check changes nothing. A declaration that conflicts
  # with an existing one fails with PRECONDITION_FAILED naming it; what came before it stays.
  importDefinitions @21 (definitions :Definitions);

  # The nodes of this node's cluster, this one first (only itself when standalone).
  listNodes @22 () -> (nodes :List(NodeInfo));

  # Removes a node that is down from the cluster for good (administrator only): NOT_FOUND for a
  # name the cluster does not know, PRECONDITION_FAILED while the node runs.
  forgetNode @23 (name :Text);

  # Capability grants (see CAPABILITY GRANTS), of this connection's vhost, made as its user.
  # `routingKeyPattern` is a topic pattern (`*` one word, `#` any number; "" means any key) that
  # the publisher's routing keys must match: words split at ".", a pattern of at most 255 bytes
  # without control characters, in which `*` and `#` stand only as whole words ("a.*.c" is
  # valid, "a.b*" is not). `ttlSeconds` 0 means the grant lasts until revoked; at most ten years
  # of 366 days (316224000). ACCESS_REFUSED when this user lacks the permission to grant (write
  # on the exchange, read on the queue); PRECONDITION_FAILED for a bad name, pattern or ttl.
  grantPublisher @24 (exchange :Text, routingKeyPattern :Text, ttlSeconds :UInt64)
      -> (publisher :Publisher);
  grantConsumer @25 (queue :Text, ttlSeconds :UInt64) -> (consumer :QueueConsumer);

  # This user's grants; an administrator's lists every grant of the node.
  listGrants @26 () -> (grants :List(GrantInfo));

  # Ends a grant, named by its whole token in hex (64 digits) or by its tokenPrefix (GrantInfo,
  # 8 digits), in either case, and closes the connections of its capabilities. Its creator or an administrator only (ACCESS_REFUSED);
  # NOT_FOUND for no such grant.
  revokeGrant @27 (token :Text);

  # Returns once this node has applied every metadata change its cluster's log committed before
  # the call, as ZooKeeper's sync does: listings made after it on this connection are then no
  # older than the call (linearizable). Listings alone read this node's copy, which may lag the
  # leader's by a moment, or, on a member cut off from a majority, by as long as the cut lasts.
  # It covers what goes through the log: users and permissions, as yet. Standalone, or in a
  # cluster that keeps no log, it returns at once. RESOURCE_ERROR "no quorum: ..." when the
  # log's leader cannot be reached.
  syncMetadata @28 ();
}

# An independent session on a connection: its own delivery tags, consumers, prefetch and
# confirm mode. Calls on one channel are carried out in the order they were made.
interface Channel {
  # Declares an exchange. Idempotent for the same properties; PRECONDITION_FAILED when an
  # exchange of that name exists with other ones. `passive` only checks that it exists.
  # Types: direct, fanout, topic, headers. Names starting with "amq." are reserved.
  exchangeDeclare @0 (name :Text, type :Text, durable :Bool, autoDelete :Bool, internal :Bool,
                      passive :Bool, arguments :List(Field)) -> ();

  # Deletes an exchange and its bindings. `ifUnused` refuses (PRECONDITION_FAILED) while bound.
  # Deleting an exchange that does not exist succeeds (as in RabbitMQ).
  exchangeDelete @1 (name :Text, ifUnused :Bool) -> ();

  # Declares a queue. An empty name asks the server for a generated `amq.gen-...` name.
  # Exclusive queues belong to this connection and go when it closes; auto-delete queues go when
  # their last consumer does. Arguments understood: x-message-ttl, x-expires, x-max-length,
  # x-max-length-bytes, x-overflow (drop-head | reject-publish | reject-publish-dlx),
  # x-dead-letter-exchange, x-dead-letter-routing-key, x-max-priority (1-255),
  # x-single-active-consumer (bool), x-queue-type (classic | stream). The numbers (ttl, expires,
  # lengths, priority) are `int` values, never text or float; x-overflow, x-queue-type and the
  # dead-letter ones are `text`; anything else is PRECONDITION_FAILED naming the argument. A stream is durable, not
  # exclusive nor auto-delete, and takes x-max-length-bytes, x-max-age ("7D", "12h", "30m"; units
  # Y M D h m s) and x-stream-max-segment-size-bytes (retention removes whole segments) instead of
  # the classic arguments. Others are kept and listed.
  # In a cluster, `node` names the node a new queue is created on (empty: the node this
  # connection is on); it is ignored for a queue that exists already. An unknown or stopped
  # node is NOT_FOUND naming it; an exclusive queue cannot be put on another node
  # (PRECONDITION_FAILED).
  queueDeclare @2 (name :Text, durable :Bool, exclusive :Bool, autoDelete :Bool, passive :Bool,
                   arguments :List(Field), node :Text) -> (name :Text, messageCount :UInt32,
                                                           consumerCount :UInt32);

  # Deletes a queue; its consumers are cancelled. Returns how many ready messages were dropped.
  # Deleting a queue that does not exist succeeds and returns 0 (as in RabbitMQ). A stream with
  # consumer groups that have not reached its end is refused (PRECONDITION_FAILED naming them
  # and their lag) unless `force`.
  queueDelete @3 (name :Text, ifUnused :Bool, ifEmpty :Bool, force :Bool)
      -> (messageCount :UInt32);

  # Drops the ready messages of a queue (unacked ones stay). Returns how many were dropped.
  queuePurge @4 (name :Text) -> (messageCount :UInt32);

  queueBind @5 (queue :Text, exchange :Text, bindingKey :Text, arguments :List(Field)) -> ();
  queueUnbind @6 (queue :Text, exchange :Text, bindingKey :Text, arguments :List(Field)) -> ();

  # Publishes one message; returns once every queue it was routed to has taken it.
  publish @7 (message :OutboundMessage) -> (result :PublishResult);

  # Publishes many messages in one call (much cheaper per message). Results come in order, one
  # per message; the call returns when all have (see FLOW CONTROL, PUBLISHING for how many to
  # keep in flight).
  publishBatch @8 (messages :List(OutboundMessage)) -> (results :List(PublishResult));

  # Subscribes `consumer` to a queue. An empty tag asks for a generated one. `prefetch` bounds
  # unacknowledged deliveries to this consumer (0 = the channel's qos value; if that is 0 too,
  # unlimited). `exclusive` refuses other consumers (ACCESS_REFUSED) while it lasts. A queue
  # serves its highest-`priority` consumers first (AMQP's x-priority; default 0) and lower ones
  # while those have no prefetch left. `window` sets how deliveries are cut into calls (see
  # DeliveryWindow; PRECONDITION_FAILED past its limits). Deliveries may reach `consumer`
  # before this call returns.
  consume @9 (queue :Text, consumerTag :Text, noAck :Bool, exclusive :Bool, prefetch :UInt32,
              consumer :Consumer, priority :Int32, window :DeliveryWindow)
      -> (consumerTag :Text);

  # Ends a subscription; its unacked messages go back to the queue.
  cancel @10 (consumerTag :Text) -> ();

  # Pulls one message. `empty` when the queue has none ready.
  get @11 (queue :Text, noAck :Bool) -> (result :GetResult);
  struct GetResult {
    union {
      empty @0 :Void;
      delivery @1 :Delivery;
    }
  }

  # Settles deliveries of this channel. `multiple` covers every tag up to and including this one.
  # A tag that is not outstanding (never given, settled already, or void since its consumer was
  # cancelled or the channel recovered) fails this call alone with PRECONDITION_FAILED naming
  # the tag: unlike AMQP, the channel and its consumers stay open, and nothing is settled.
  ack @12 (deliveryTag :UInt64, multiple :Bool) -> ();
  nack @13 (deliveryTag :UInt64, multiple :Bool, requeue :Bool) -> ();
  reject @14 (deliveryTag :UInt64, requeue :Bool) -> ();

  # Default prefetch for consumers created later on this channel (0 = unlimited).
  qos @15 (prefetch :UInt32) -> ();

  # Confirm mode: a publish returns only once it is safe (on disk, for persistent messages in
  # durable queues).
  confirmSelect @16 () -> ();

  # Finds a message still held by a queue of this vhost by Warren's id.
  lookup @17 (messageId :Data) -> (result :LookupResult);
  struct LookupResult {
    union {
      notFound @0 :Void;
      found :group {
        queue @1 :Text;
        state @2 :Text;       # "ready" or "unacked"
        delivery @3 :Delivery;
      }
    }
  }

  # Closes the channel: consumers cancelled, unacked messages requeued.
  close @18 () -> ();

  # Returns every unacked delivery of this channel to its queue (AMQP basic.recover, requeue).
  recover @19 () -> ();

  # Acks each of these tags, in order, as `ack(tag, false)` would: one call for many acks, which
  # is how a client that acks each message should send them. Every outstanding tag in the list
  # is acked, wherever an unknown one stands, so how acks are grouped into calls never changes
  # what is settled. An unknown tag fails the call with PRECONDITION_FAILED naming the first
  # one, as `ack` does; the channel stays open.
  ackEach @20 (deliveryTags :List(UInt64)) -> ();

  # Binds exchange `destination` to exchange `source` (AMQP exchange.bind): what `source` routes
  # by `bindingKey` / `arguments` goes on through `destination`. A message reaches each queue
  # once, however many paths lead there; cycles end. Durable when both exchanges are.
  exchangeBind @21 (destination :Text, source :Text, bindingKey :Text, arguments :List(Field))
      -> ();
  exchangeUnbind @22 (destination :Text, source :Text, bindingKey :Text,
                      arguments :List(Field)) -> ();

  # Subscribes `consumer` to a stream from `offset`. Deliveries carry their `streamOffset`; acks
  # (required: `prefetch` must be at least 1) return credit and, in a `group`, tell the group
  # what it is done with. The consumers of one group share it: each message goes to one of them,
  # and the group's committed offset is stored on the node (explicitly with commitOffset, and
  # by itself every 1000 acks, every 5 s while acks come, and when its last consumer leaves).
  # A group's first consumer without an offset resumes after the committed offset; later ones
  # join where the group is. A classic queue takes it as `consume` would, ignoring offset and
  # group.
  consumeStream @23 (queue :Text, consumerTag :Text, offset :StreamOffset, group :Text,
                     prefetch :UInt32, consumer :Consumer, window :DeliveryWindow)
      -> (consumerTag :Text);

  # Stores `offset` as the last one `group` is done with (creating the group). PRECONDITION_FAILED
  # for an offset past the stream's end or a queue that is not a stream.
  commitOffset @24 (queue :Text, group :Text, offset :UInt64) -> (group :GroupInfo);

  # The stream's consumer groups.
  listGroups @25 (queue :Text) -> (groups :List(GroupInfo));

  # The stream's message at `offset`, without consuming it; `found` false when retention removed
  # it or it does not exist yet.
  readOffset @26 (queue :Text, offset :UInt64) -> (found :Bool, delivery :Delivery);

  # Up to `count` (1-1000) of the queue's ready messages from position `from` (0 = the one a
  # consumer gets next), in delivery order, left in the queue: no tags are taken and nothing is
  # marked redelivered. Each delivery's `deliveryTag` holds its position. Needs read permission.
  peek @27 (queue :Text, from :UInt64, count :UInt32) -> (deliveries :List(Delivery));
}
