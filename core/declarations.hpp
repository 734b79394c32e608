// Declarations of exchanges, queues and bindings: what a client declares, what LMDB stores.
// Plain data without CAF, shared by the actors and the storage layer.
#pragma once

#include "core/message.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

enum class exchange_type : uint8_t { direct, fanout, topic, headers };

const char* to_string(exchange_type t);
bool parse_exchange_type(const std::string& text, exchange_type& out);

struct exchange_spec {
  std::string name;
  exchange_type type = exchange_type::direct;
  bool durable = false;
  bool auto_delete = false;
  bool internal = false;
  field_table arguments;
};

struct queue_spec {
  std::string name;
  bool durable = false;
  bool exclusive = false;
  bool auto_delete = false;
  field_table arguments;
  std::string home;  // the cluster node it lives on: in a declare, the node to create it on
                     // (empty: the declaring node); in the metadata log's record, its node.
                     // Not part of equivalence; not in the node's own queue record
};

/// A binding from `exchange` (the source) to a queue or, with to_exchange (exchange.bind), to
/// another exchange, both named by `destination`.
struct binding_spec {
  std::string exchange;
  std::string destination;
  std::string key;
  field_table arguments;
  bool to_exchange = false;
};

/// A user as RabbitMQ keeps one: the password only as a salted SHA-256 hash (see users.hpp),
/// and tags (administrator, monitoring, management).
struct user_record {
  std::string name;
  std::string password_hash;  // base64(salt ‖ sha256(salt ‖ password)), RabbitMQ's format
  std::vector<std::string> tags;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, user_record& x) {
  return f(x.name, x.password_hash, x.tags);
}

/// A capability grant (broker.capnp, Connection.grantPublisher / grantConsumer): who may use
/// one exchange or queue, and how, by holding its token. Only the token's SHA-256 is kept.
enum class grant_kind : uint8_t { publisher, consumer };

struct grant_record {
  std::string token_hash;    // hex SHA-256 of the token's bytes: the record's key
  std::string token_prefix;  // the token's first 8 hex digits, for listings and revoking
  grant_kind kind = grant_kind::publisher;
  std::string vhost;
  std::string user;         // who granted it: the grant may do no more than this user may
  std::string target;       // the exchange (publisher) or queue (consumer)
  std::string key_pattern;  // publisher: a topic pattern routing keys must match; "" = any
  int64_t created_ms = 0;   // since the epoch
  int64_t expires_ms = 0;   // since the epoch; 0 = never
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, grant_record& x) {
  return f(x.token_hash, x.token_prefix, x.kind, x.vhost, x.user, x.target, x.key_pattern,
           x.created_ms, x.expires_ms);
}

/// What a user may do in a vhost, as RabbitMQ's three regular expressions over resource names
/// (searched, not anchored; an empty one matches nothing).
struct permission_record {
  std::string user;
  std::string vhost;
  std::string configure;
  std::string write;
  std::string read;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, permission_record& x) {
  return f(x.user, x.vhost, x.configure, x.write, x.read);
}

/// A node of the cluster as its peers know it: its name (unique in the cluster) and the
/// HOST:PORT of its cluster listener.
struct cluster_member {
  std::string name;
  std::string address;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_member& x) {
  return f(x.name, x.address);
}

/// RabbitMQ's per-vhost limits; a negative value means no limit.
struct vhost_limits {
  int64_t max_connections = -1;
  int64_t max_queues = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vhost_limits& x) {
  return f(x.max_connections, x.max_queues);
}
/// A vhost as definitions carry it: its name and limits.
struct vhost_definition {
  std::string name;
  vhost_limits limits;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vhost_definition& x) {
  return f(x.name, x.limits);
}

/// What a node is set up with, as RabbitMQ's definitions file holds it: users (with their
/// password hashes), vhosts, permissions, and the durable exchanges, queues and bindings of every
/// vhost. Exchanges, queues and bindings carry their vhost beside the spec.
struct definitions {
  std::vector<user_record> users;
  std::vector<vhost_definition> vhosts;
  std::vector<permission_record> permissions;
  std::vector<std::pair<std::string, exchange_spec>> exchanges;
  std::vector<std::pair<std::string, queue_spec>> queues;
  std::vector<std::pair<std::string, binding_spec>> bindings;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exchange_spec& x) {
  return f(x.name, x.type, x.durable, x.auto_delete, x.internal, x.arguments);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_spec& x) {
  return f(x.name, x.durable, x.exclusive, x.auto_delete, x.arguments, x.home);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, binding_spec& x) {
  return f(x.exchange, x.destination, x.key, x.arguments, x.to_exchange);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, definitions& x) {
  return f(x.users, x.vhosts, x.permissions, x.exchanges, x.queues, x.bindings);
}
}  // namespace warren
