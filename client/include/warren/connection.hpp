// warren::client::connection: a connection to a warren-node over Cap'n Proto RPC.
//
// Thread-safe: any thread may call any method; calls block until the broker answers and throw
// warren::client::error on failure (code() = "NOT_FOUND", "DISCONNECTED", ...). Consumer
// callbacks run on one worker thread per connection. Destroying the connection closes it: the
// broker requeues every message this connection had not acknowledged.
#pragma once

#include "warren/types.hpp"

#include <memory>
#include <string>
#include <vector>

namespace warren::client {

class channel;
class client_runtime;

struct connect_options {
  std::string host = "127.0.0.1";
  uint16_t port = 5680;
  std::string vhost = "/";
  std::string user = "guest";  // guest may only log in from a loopback address
  std::string password = "guest";
  std::string client_name = "warren-client";
  /// TLS (the node's --tls-port): the node's certificate must be valid for `host` and signed by
  /// a CA in `tls_ca` (the system's trust store when empty). `tls_cert` / `tls_key` are this
  /// client's certificate, for a node that verifies clients (--tls-ca). The certificate is
  /// checked against a host *name*: to reach a node by IP address, give the name its
  /// certificate carries as `tls_server_name`.
  bool tls = false;
  std::string tls_server_name;  // default: host
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

class connection {
 public:
  static std::unique_ptr<connection> open(const connect_options& options);
  ~connection();

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  std::unique_ptr<channel> open_channel();

  /// Closes the connection (idempotent). Later calls fail with CHANNEL_ERROR / DISCONNECTED.
  void close();

  void add_vhost(const std::string& name);
  void delete_vhost(const std::string& name);
  std::vector<std::string> list_vhosts();
  /// RabbitMQ's per-vhost limits; negative = none. Setting replaces both.
  void set_vhost_limits(const std::string& name, const vhost_limits& limits);
  vhost_limits get_vhost_limits(const std::string& name);
  /// Users (administrator only). list_users gives names and tags, never password hashes.
  void add_user(const std::string& name, const std::string& password,
                const std::vector<std::string>& tags = {});
  void change_password(const std::string& name, const std::string& password);
  void delete_user(const std::string& name);
  std::vector<user_record> list_users();
  /// RabbitMQ's configure / write / read patterns of a user in a vhost (administrator only).
  void set_permissions(const permission_record& p);
  void clear_permissions(const std::string& user, const std::string& vhost);
  std::vector<permission_record> list_permissions();
  /// The node's users (with password hashes), vhosts, permissions and durable topology
  /// (administrator only); see Connection.exportDefinitions in broker.capnp.
  definitions export_definitions();
  /// Applies definitions (administrator only): checked whole first, then applied in order.
  void import_definitions(const definitions& defs);
  std::vector<exchange_row> list_exchanges();
  std::vector<queue_row> list_queues();
  std::vector<binding_row> list_bindings();
  std::vector<consumer_row> list_consumers();
  std::vector<connection_row> list_connections();
  /// Traffic counters of every queue and connection of the node, with its uptime and memory.
  node_stats stats();
  /// The nodes of the cluster, the connected one first (only it when standalone).
  std::vector<node_row> list_nodes();
  /// Removes a node that is down from the cluster (administrator only).
  void forget_node(const std::string& name);
  /// Returns once the node applied every metadata change its cluster's log committed before the
  /// call, so that listings after it are current (linearizable); listings alone read the
  /// node's copy, which may lag. At once when the node keeps no log; fails with "no quorum: ..."
  /// when the log's leader cannot be reached.
  void sync_metadata();

  /// Capability grants (warren/grants.hpp), of this connection's vhost, made as its user, who
  /// needs the permission granted (write on the exchange, read on the queue). A publisher's
  /// routing keys must match `key_pattern` (a topic pattern; empty = any); `ttl_seconds` 0
  /// lasts until revoked. Each returns the grant's token in hex, for restore_grant().
  std::string grant_publisher(const std::string& exchange, const std::string& key_pattern = {},
                              uint64_t ttl_seconds = 0);
  std::string grant_consumer(const std::string& queue, uint64_t ttl_seconds = 0);
  /// This user's grants (an administrator's: every grant of the node).
  std::vector<grant_row> list_grants();
  /// Ends a grant, named by its whole token or its 8-digit prefix, and closes its channels.
  void revoke_grant(const std::string& token);

  struct state;  // kj-thread side, shared with channels

 private:
  connection() = default;
  std::shared_ptr<client_runtime> runtime_;
  std::shared_ptr<state> state_;
  bool closed_ = false;
};

}  // namespace warren::client
