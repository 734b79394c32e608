// The vhost actor's interface, declared once as CAF typed_actor signatures (vhost_actor.hpp
// describes each message). Senders that hold the vhost as caf::actor go through vhost_handle()
// so that a request it does not take, or a reply of the wrong type, fails to compile.
#pragma once

#include "actors/common/cluster_protocol.hpp"
#include "actors/common/protocol.hpp"

#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace warren {

using vhost_actor_type = caf::typed_actor<
    // declarations, from connections (the last caf::actor is the asking connection)
    caf::reacts_to<declare_atom, exchange_spec, bool>,
    caf::reacts_to<delete_atom, exchanges_atom, std::string, bool>,
    caf::replies_to<declare_atom, queue_spec, bool, caf::actor>::with<queue_info>,
    // if_unused, if_empty, force (a stream with consumer groups behind its end)
    caf::replies_to<delete_atom, queues_atom, std::string, bool, bool, bool,
                    caf::actor>::with<uint32_t>,
    caf::replies_to<stream_atom, stream_command, caf::actor>::with<stream_reply>,
    caf::replies_to<purge_atom, std::string, caf::actor>::with<uint32_t>,
    caf::reacts_to<bind_atom, binding_spec, caf::actor>,
    caf::reacts_to<unbind_atom, binding_spec, caf::actor>,
    // lookups: an exchange (with its internal flag), a queue
    caf::replies_to<find_atom, exchanges_atom, std::string>::with<caf::actor, bool>,
    caf::replies_to<find_atom, queues_atom, std::string, caf::actor>::with<caf::actor>,
    // listings
    caf::replies_to<list_atom, exchanges_atom>::with<std::vector<exchange_info>>,
    caf::replies_to<list_atom, bindings_atom>::with<std::vector<binding_info>>,
    caf::replies_to<list_atom, queues_atom>::with<std::vector<queue_info>>,
    caf::replies_to<list_atom, consumers_atom>::with<std::vector<consumer_info>>,
    caf::replies_to<lookup_atom, message_id>::with<lookup_reply>,
    // from queues: dead letters, a queue that should go (auto-delete, x-expires)
    caf::reacts_to<dead_atom, std::string, std::vector<message_ptr>>,
    caf::reacts_to<unused_atom, std::string, caf::actor>,
    // from the node
    caf::reacts_to<settings_atom, vhost_limits>, caf::reacts_to<shutdown_atom>,
    caf::reacts_to<ready_atom>,
    // from the node: the cluster actor and this node's name; other members' queues; a member
    // down (its queues come back with it) or forgotten
    caf::reacts_to<cluster_atom, caf::actor, std::string>,
    caf::reacts_to<placed_atom, queue_placement>,
    caf::reacts_to<placed_atom, std::string, std::vector<queue_placement>>,  // all of a node's
    caf::reacts_to<removed_atom, std::string, std::string>,                  // queue, node
    caf::reacts_to<removed_atom, std::string>, caf::reacts_to<down_atom, std::string>,
    // exchanges and bindings declared on another member, applied here without being sent on
    caf::reacts_to<replicate_atom, exchange_spec>,
    caf::reacts_to<replicate_atom, delete_atom, std::string>,
    caf::reacts_to<replicate_atom, bind_atom, binding_spec>,
    caf::reacts_to<replicate_atom, unbind_atom, binding_spec>,
    // from the node: our exchanges and bindings as members share them; a member's, to take
    // in place of ours (topology_view.hpp)
    caf::replies_to<view_atom>::with<vhost_topology>, caf::reacts_to<adopt_atom, vhost_topology>,
    // a member about to create a queue (its name, the declaration)
    caf::replies_to<claim_atom, std::string, queue_spec>::with<claim_reply>,
    // from the node, once the metadata log carries durable exchanges (vhost_log_exchanges.cpp):
    // the node to propose through; an exchange the log put or erased; after a seed or a
    // snapshot, every durable exchange of this vhost
    caf::reacts_to<applied_atom, caf::actor>, caf::reacts_to<applied_atom, exchange_spec>,
    caf::reacts_to<applied_atom, delete_atom, std::string>,
    // bindings between durable exchanges: put, erased (by LMDB key); after a seed or snapshot,
    // every durable exchange of this vhost and every binding between them
    caf::reacts_to<applied_atom, bind_atom, binding_spec>,
    caf::reacts_to<applied_atom, unbind_atom, std::string>,
    // durable queues (vhost_log_queues.cpp): put (spec.home names its node), erased by name
    caf::reacts_to<applied_atom, queue_spec>,
    caf::reacts_to<applied_atom, delete_atom, queues_atom, std::string>,
    // after a seed or snapshot: every durable exchange, binding between them and durable queue
    caf::reacts_to<applied_atom, exchanges_atom, std::vector<exchange_spec>,
                   std::vector<binding_spec>, std::vector<queue_spec>>>;

/// The typed view of a vhost actor held as caf::actor.
inline vhost_actor_type vhost_handle(const caf::actor& vhost) {
  return caf::actor_cast<vhost_actor_type>(vhost);
}

}  // namespace warren
