// Node actor: the root of one broker process. Owns the vhosts and the user table, admits
// connections, and answers node-wide listings. Its messages, declared as code in
// node_protocol.hpp:
//
//   (connect_atom, client_hello, connection actor)
//       -> (vhost actor, connection_settings, permission_record of the user in that vhost,
//           grant_record: the grant of a login by token, else empty)
//   (auth_atom, client_hello)                         -> (tags, vhosts)  the management door's
//       basic auth: the user's tags and the vhosts it has permissions in
//   (settings_atom, connection_settings)              for connections that log in later
//   (settings_atom, vhost_atom, name, vhost_limits)   -> void  stored, and enforced from now
//   (settings_atom, vhost_atom, name)                 -> vhost_limits
//   (declare_atom, user_atom, name, password, tags)   -> void  a new user
//   (settings_atom, user_atom, name, password)        -> void  a new password
//   (delete_atom, user_atom, name)                    -> void
//   (list_atom, user_atom)                            -> std::vector<user_record>, no hashes
//   (declare_atom, permission_atom, permission_record) -> void  set (replaces)
//   (delete_atom, permission_atom, user, vhost)       -> void  clear
//   (list_atom, permission_atom)                      -> std::vector<permission_record>
//   (grant_atom, grant_record, ttl_s)                 -> token  a capability grant of the asking
//       connection's user and vhost (node_grants.cpp); (list_atom, grant_atom) -> its grants (all
//       for administrators); (revoke_atom, token or prefix) -> void; (expire_atom, hash) its own
// Adding and deleting vhosts, setting their limits and managing users are for connections of
// users tagged administrator (the sender is the asking connection actor).
//        NOT_FOUND for an unknown vhost, ACCESS_REFUSED for bad credentials
//   (declare_atom, vhost_atom, name)                 -> void   idempotent
//   (delete_atom, vhost_atom, name)                  -> void   stops everything in it
//   (list_atom, vhost_atom)                          -> std::vector<std::string>
//   (ready_atom)                                     -> void   once every queue has recovered
//   (list_atom, conns_atom)                          -> std::vector<connection_info>
//   (list_atom, queues_atom)                         -> std::vector<queue_info>  every vhost
//   (alarm_atom, actor)                              the resource alarm new connections follow
//   (cluster_atom, actor, name)                      the cluster actor and this node's name
//                                                    (warren-node, at start-up)
//   (placed_atom, from, placements, complete) / (removed_atom, vhost, queue, node) /
//   (removed_atom, node) /
//   (down_atom, node)                                from the cluster actor: other members'
//                                                    queues for the vhosts; a member down for
//                                                    the vhosts and the connections
//   (view_atom)                                      -> metadata_view  ours, for a member
//   (adopt_atom, metadata_view)                      a member's, taken in place of ours
//   (list_atom, nodes_atom)                          -> std::vector<node_info>  the cluster
//   (forget_atom, name)                              -> void   a dead member (administrators)
//   (stats_atom)                                     -> node_stats_info  queues, connections,
//                                                       uptime and memory
//   (sync_atom, metalog_atom)                        -> void   once this node applied what the
//                                                       metadata log committed before
#pragma once

#include "actors/common/node_protocol.hpp"
#include "actors/storage/storage_context.hpp"
#include "persistence/lmdb_store.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <functional>
#include <map>
#include <unordered_map>

namespace warren {

struct node_state {
  std::map<std::string, caf::actor> vhosts;
  std::map<std::string, user_record> users;
  std::map<std::pair<std::string, std::string>, permission_record> permissions;  // user, vhost
  std::unordered_map<caf::actor_addr, std::string> connection_user;  // who each one logged in as
  std::map<std::string, grant_record> grants;  // capability grants, by their token's hash
  // The connections logged in by a grant: its token's hash.
  std::unordered_map<caf::actor_addr, std::string> connection_grant;
  std::unordered_map<caf::actor_addr, caf::actor> connections;
  storage_context storage;
  int64_t started_ms = 0;        // steady clock
  caf::actor alarm;              // resource_alarm: connections subscribe to it when they connect
  caf::actor cluster;            // cluster_actor: this node's membership
  std::string node_name;         // this node's name in the cluster
  connection_settings settings;  // handed to connections as they log in
  std::unordered_map<caf::actor_addr, std::string> connection_vhost;
  std::map<std::string, vhost_limits> limits_of;  // vhosts that have limits
  uint64_t log_token = 0;   // users and permissions follow the metadata log: what it sends with
  bool log_seeded = false;  // ... once it holds them (node_log_changes.cpp)
  bool cluster_has_log = false;  // a member holds one
  // Vhosts the log deleted whose actors are still stopping: what waits for each to be gone; and
  // the limits of one the log added again meanwhile, started once the old one is (both
  // node_log_vhosts.cpp).
  std::map<std::string, std::vector<std::function<void()>>> vhosts_stopping;
  std::map<std::string, vhost_limits> vhosts_to_restart;
  // What the log applied to the durable exchanges of a vhost to restart, sent to its new actor
  // once it runs (node_log_changes.cpp): the entries it would otherwise miss.
  std::map<std::string, std::vector<std::function<void(const caf::actor&)>>> exchanges_to_replay;
  // What a member told about a vhost not here yet, waiting for this node's log to catch up: each
  // called with whether the vhost is here then (node_log_vhosts.cpp).
  std::map<std::string, std::vector<std::function<void(bool)>>> parked_for_vhost;

  static inline const char* name = "node";
};

/// `contents` is what the metadata store held at start-up; a fresh store gets the vhost "/".
using node_self = node_actor_type::stateful_pointer<node_state>;

node_actor_type::behavior_type node_actor(node_self self, storage_context storage,
                                          persistence::metadata_contents contents);

}  // namespace warren
