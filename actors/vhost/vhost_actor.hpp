// Vhost actor: the registry of one virtual host. Maps names to exchange and queue actors, holds
// the bindings, and serializes declare / delete / bind so metadata stays consistent. Exchanges
// and queues it spawns live as long as it does.
//
// Requests (declared as code in vhost_protocol.hpp; from connection actors; `requester` is the
// asking connection, used for exclusive queues):
//   (declare_atom, exchange_spec, passive)                       -> void
//   (delete_atom, exchanges_atom, name, if_unused)               -> void
//   (declare_atom, queue_spec, passive, requester)               -> queue_info
//   (delete_atom, queues_atom, name, if_unused, if_empty, force, req) -> uint32 messages dropped
//   (stream_atom, stream_command, requester)                     -> stream_reply  streams only
//   (purge_atom, name, requester)                                -> uint32
//   (bind_atom, binding_spec, requester) / (unbind_atom, ...)    -> void  to a queue or, with
//                                                                   to_exchange, an exchange
//   (find_atom, exchanges_atom, name)                            -> (exchange actor, internal)
//   (find_atom, queues_atom, name, requester)                    -> queue actor
//   (list_atom, exchanges_atom | queues_atom | bindings_atom | consumers_atom) -> rows
//   (lookup_atom, message_id)                                    -> lookup_reply
// One-way: (settings_atom, vhost_limits) sets the queue limit;
// (dead_atom, exchange, messages) routes dead letters; (unused_atom, name, queue)
// deletes an auto-delete / expired queue.
//   (shutdown_atom) -> void   the vhost is deleted: its queues' messages and its records go
//   (ready_atom)    -> void   once every queue has recovered its messages
// In a cluster: (cluster_atom, cluster, node name) starts announcing this node's queues;
// (placed_atom, placement) / (placed_atom, node, all its placements here) /
// (removed_atom, queue, node) / (removed_atom, node) /
// (down_atom, node) keep the queues of other nodes, which lookups, declares, bindings and the
// default exchange then reach where they live. (replicate_atom, ...) applies one exchange or
// binding change made on a member; (view_atom) -> vhost_topology hands out ours and
// (adopt_atom, vhost_topology) takes a member's in place of ours (topology_view.hpp).
// Durable declarations are answered after the persistence actor committed them.
#pragma once

#include "actors/common/vhost_protocol.hpp"
#include "actors/storage/storage_context.hpp"
#include "actors/vhost/binding_table.hpp"
#include "actors/vhost/remote_queues.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <functional>
#include <map>
#include <unordered_map>

namespace warren {

/// What the metadata store held for a vhost at start-up.
struct vhost_recovery {
  std::vector<exchange_spec> exchanges;
  std::vector<std::pair<queue_spec, uint64_t>> queues;  // spec, id
  std::vector<binding_spec> bindings;
  std::map<uint64_t, std::map<std::string, int64_t>> stream_offsets;  // by queue id, group
  std::vector<queue_spec> queue_homes;  // the metadata log's durable queues, spec.home set
};

struct vhost_state {
  struct exchange_entry {
    exchange_spec spec;
    caf::actor actor;
    bool builtin = false;
    uint64_t id = 0;  // its id as the target of exchange bindings (exchange_id_bit set)
  };
  struct queue_entry {
    queue_spec spec;
    uint64_t id = 0;
    caf::actor actor;
    caf::actor owner;     // exclusive queues only
    bool stream = false;  // x-queue-type=stream (stream_actor.hpp)
  };

  std::string vhost;
  std::map<std::string, exchange_entry> exchanges;
  std::map<std::string, queue_entry> queues;
  // Keyed by exchange, queue, key and canonical arguments so that binding twice is a no-op.
  binding_table bindings;
  uint64_t next_exchange_id = 0;
  vhost_limits limits;
  storage_context storage;
  caf::actor cluster;     // this node's cluster actor: our queues are announced to it
  std::string node_name;  // this node's name in the cluster
  remote_queues remote;   // queues of this vhost living on other nodes
  caf::actor down_queue;  // refuses publishes to queues whose node is down
  // From members, to queues not placed here yet; by queue name.
  std::multimap<std::string, binding_spec> waiting_bindings;
  // Queues about to be created here while the members are asked (cluster claims), or while
  // their record is committed (`committing`: the name is ours), with the requests naming them
  // that wait for the answer (each asks again when called).
  struct claim {
    queue_spec spec;
    std::vector<std::function<void()>> parked;
    bool committing = false;
  };
  std::map<std::string, claim> claims;
  // New durable exchanges and bindings whose record is being committed (vhost_parts.hpp,
  // exchange_hold / binding_hold), with the requests naming them that wait for it.
  std::map<std::string, std::vector<std::function<void()>>> committing;
  // A delete of this vhost is under way: creates are refused, so that no record is committed
  // after the vhost's erases.
  bool deleting = false;
  // Set once the metadata log carries durable exchanges: the node their changes are proposed
  // through (vhost_log_exchanges.cpp).
  caf::actor log_node;
  // The metadata log's durable queues of this vhost, on every member, by name: spec.home is the
  // node each lives on (vhost_log_queues.cpp). A name here is taken cluster-wide.
  std::map<std::string, queue_spec> log_queues;
  // What the log applied to durable queues before the node told this vhost its name.
  std::vector<std::function<void()>> log_queues_waiting;
  bool own_queues_offered = false;  // propose_missing_own_queues ran (vhost_log_queues.cpp)

  static inline const char* name = "vhost";
};

vhost_actor_type::behavior_type vhost_actor(vhost_actor_type::stateful_pointer<vhost_state> self,
                                            std::string name, storage_context storage,
                                            vhost_recovery recovered);

}  // namespace warren
