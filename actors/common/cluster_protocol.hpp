// The cluster actor's interface (cluster_actor.hpp describes each message), and what nodes send
// each other to join. Every type here crosses nodes through CAF's middleman, so each has an
// inspect() and is registered in message_types.hpp.
#pragma once

#include "actors/common/protocol.hpp"
#include "persistence/raft_frame.hpp"

#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace warren {

using hello_atom = caf::atom_constant<caf::atom("hello")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using nodes_atom = caf::atom_constant<caf::atom("nodes")>;
using forget_atom = caf::atom_constant<caf::atom("forget")>;
using placed_atom = caf::atom_constant<caf::atom("placed")>;
using removed_atom = caf::atom_constant<caf::atom("removed")>;
using down_atom = caf::atom_constant<caf::atom("down")>;
using replicate_atom = caf::atom_constant<caf::atom("replicate")>;
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using view_atom = caf::atom_constant<caf::atom("view")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using raft_atom = caf::atom_constant<caf::atom("raft")>;
using propose_atom = caf::atom_constant<caf::atom("propose")>;
using proposed_atom = caf::atom_constant<caf::atom("proposed")>;
using applied_atom = caf::atom_constant<caf::atom("applied")>;
using metalog_atom = caf::atom_constant<caf::atom("metalog")>;

/// A member's answer to a node about to create a queue: granted, or the queue (or a claim that
/// wins over the asker's: the lower node name) is already there, with its declaration and the
/// vhost actor that answers declares of it.
struct claim_reply {
  bool granted = true;
  std::string home;
  queue_spec spec;
  caf::actor home_vhost;
};

/// A change to a vhost's exchanges or bindings, made on one node and applied on the others
/// (queues are not copied: they live on one node, see queue_placement).
struct topology_change {
  enum kind_t : uint8_t { declare_exchange, delete_exchange, bind, unbind };
  uint8_t kind = declare_exchange;
  exchange_spec exchange;  // declare_exchange
  std::string name;        // delete_exchange
  binding_spec binding;    // bind, unbind
};

/// Users, vhosts and permissions changed on one node, applied on every other: what to add or
/// replace (`put`, as a definitions file carries them; its exchanges, queues and bindings stay
/// empty) and what to remove. In a metadata_view, `put` is the sender's whole view and the
/// rest is empty (the taker works out what goes).
struct access_change {
  definitions put;
  std::vector<std::string> users_deleted;
  std::vector<std::string> vhosts_deleted;
  std::vector<permission_record> permissions_cleared;  // by user and vhost
};

/// A vhost's exchanges and bindings as the members share them: not its built-in exchanges, not
/// the default exchange's implicit bindings, not bindings of exclusive queues.
struct vhost_topology {
  std::string vhost;
  std::vector<exchange_spec> exchanges;
  std::vector<binding_spec> bindings;
};

/// All that members share except queues (which live on their home node and are announced with
/// queue_placement): each member sends its view to every member it meets. The one behind takes
/// it whole, removing what the view lacks, so a member that was down or cut off catches up on
/// what it missed, deletions included (cluster_actor.hpp: who takes whose).
struct metadata_view {
  std::string from;         // the sender's node name
  uint64_t version = 0;     // shared-metadata changes the sender had made or applied
  bool first_join = false;  // the sender is joining a cluster for the first time
  access_change access;     // users, vhosts with their limits, permissions (whole)
  std::vector<vhost_topology> vhosts;
};

/// Where a queue lives: announced by its home node to every member, so that a publish or a
/// consume arriving anywhere reaches the queue actor itself.
struct queue_placement {
  std::string vhost;
  queue_spec spec;
  std::string node;  // its home node's name
  caf::actor queue;  // its queue actor there
  caf::actor home;   // the vhost actor there, which deletes and purges it
};

/// A node asking to join (cluster_auth.hpp: the proofs).
struct join_request {
  cluster_member member;  // who asks, and where its cluster listener is
  std::string nonce;      // the one the asked node handed out with hello
  std::string proof;      // cluster_proof(secret, "join", nonce, member.name)
  std::string challenge;  // a nonce of the asker's, for the answer's proof
  bool has_log = false;   // the asker holds a metadata log with a configuration (raft_relay)
};

/// The answer of a node that let another join.
struct join_reply {
  cluster_member member;                // who answers
  std::string proof;                    // cluster_proof(secret, "welcome", challenge, name)
  std::vector<cluster_member> members;  // every other node it knows, for a full mesh
  bool has_log = false;                 // the answerer holds a log with a configuration
};

/// One row of `warrenctl list nodes`.
struct node_info {
  std::string name;
  std::string address;
  bool running = false;
  bool local = false;   // the node answering
  uint32_t queues = 0;  // queues that live on it (0 while it is not running)
  // The metadata log, as the answering node sees it: whether the node holds a log (as it said
  // when the two met), votes in the log's configuration, leads it.
  bool has_log = false;
  bool voter = false;
  bool leader = false;
  uint64_t log_applied = 0;  // the last index the answering node applied (its own row only)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_reply& x) {
  return f(x.granted, x.home, x.spec, x.home_vhost);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, access_change& x) {
  return f(x.put, x.users_deleted, x.vhosts_deleted, x.permissions_cleared);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, topology_change& x) {
  return f(x.kind, x.exchange, x.name, x.binding);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, vhost_topology& x) {
  return f(x.vhost, x.exchanges, x.bindings);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metadata_view& x) {
  return f(x.from, x.version, x.first_join, x.access, x.vhosts);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_placement& x) {
  return f(x.vhost, x.spec, x.node, x.queue, x.home);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_request& x) {
  return f(x.member, x.nonce, x.proof, x.challenge, x.has_log);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_reply& x) {
  return f(x.member, x.proof, x.members, x.has_log);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(x.name, x.address, x.running, x.local, x.queues, x.has_log, x.voter, x.leader,
           x.log_applied);
}
namespace persistence {  // found by argument-dependent lookup
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, raft_frame& x) {
  return f(x.what, x.from, x.from_id, x.stream, x.by_connector, x.bytes);
}
}  // namespace persistence

/// Membership: joining, the member list, forgetting, readiness.
using cluster_membership_api = caf::typed_actor<
    // from other nodes: a nonce to prove the secret with, then the join itself
    caf::replies_to<hello_atom>::with<std::string>,
    caf::replies_to<join_atom, join_request, caf::actor>::with<join_reply>,
    // how many queues live on this node
    caf::replies_to<stats_atom>::with<uint32_t>,
    // from the node (warrenctl): the members, forgetting a dead one
    caf::replies_to<list_atom, nodes_atom>::with<std::vector<node_info>>,
    caf::reacts_to<forget_atom, std::string>,
    // from a member: it forgot a node (its name, the node's)
    caf::reacts_to<forget_atom, std::string, std::string>,
    // from warren-node: answered once the node has joined the cluster it was told to join
    caf::reacts_to<ready_atom>,
    // its own timer: reconnecting to members that are down
    caf::reacts_to<tick_atom>>;

/// Metadata: queue placements, claims and remote declarations, replicated changes.
using cluster_metadata_api = caf::typed_actor<
    // from this node's vhosts: a queue of theirs started / went
    caf::reacts_to<placed_atom, queue_placement>,
    caf::reacts_to<removed_atom, std::string, std::string>,  // vhost, queue
    // from other members: their queues (the sender's name first)
    // node, placements, complete (all of that node's queues: what is missing is gone)
    caf::reacts_to<placed_atom, std::string, std::vector<queue_placement>, bool>,
    caf::reacts_to<removed_atom, std::string, std::string, std::string>,  // node, vhost, queue
    // exchanges and bindings: a change made here (vhost, change), changes made on a member
    // (its name, vhost, changes)
    caf::reacts_to<replicate_atom, std::string, topology_change>,
    // a queue about to be created here (vhost, declaration): every running member's answer; a
    // member asking us (its name, vhost, declaration)
    caf::replies_to<claim_atom, std::string, queue_spec>::with<std::vector<claim_reply>>,
    caf::replies_to<claim_atom, std::string, std::string, queue_spec>::with<claim_reply>,
    caf::reacts_to<replicate_atom, std::string, std::string, std::vector<topology_change>>,
    // users, vhosts and permissions: a change made here, one made on a member (its name first)
    caf::reacts_to<replicate_atom, access_change>,
    caf::reacts_to<replicate_atom, std::string, access_change>,
    // a queue to create on another node (declare-queue --node): from a vhost here (the node,
    // vhost, declaration), and from a member to us (vhost, declaration); the answer carries its
    // placement, so the asking vhost routes to it at once
    caf::replies_to<declare_atom, std::string, std::string, queue_spec>::with<queue_info,
                                                                              queue_placement>,
    caf::replies_to<declare_atom, std::string, queue_spec>::with<queue_info, queue_placement>,
    // a member's whole view, sent as it comes up (catching up on what one of us missed)
    caf::reacts_to<replicate_atom, metadata_view>,
    // the metadata log's frames: from this node's log (the relay's token, the member it is
    // for), and from a member's log (its sender names the member)
    caf::reacts_to<raft_atom, uint64_t, std::string, persistence::raft_frame>,
    caf::reacts_to<raft_atom, persistence::raft_frame>,
    // a change through the metadata log (an entry's bytes, metadata_log_codec): from this node
    // (with the relay's in-process token: a peer can forge a local sender in CAF 0.17's BASP),
    // answered "" once committed and applied here, or why not; from a member (its name first),
    // answered by the leader with why not and the entry's index
    caf::replies_to<propose_atom, uint64_t, std::string>::with<std::string>,
    caf::replies_to<propose_atom, std::string, std::string>::with<std::string, uint64_t>,
    // from this node (the relay's token): "" once it applied what the log committed before
    caf::replies_to<sync_atom, uint64_t>::with<std::string>,
    // from this node's log (the relay's token): a proposal answered (its number, why not, its
    // index), and applied here (its number, why not)
    caf::reacts_to<proposed_atom, uint64_t, uint64_t, std::string, uint64_t>,
    caf::reacts_to<applied_atom, uint64_t, uint64_t, std::string>>;

/// The cluster actor's whole interface. How it is cut into parts changes nothing on the link: a
/// peer sends messages, and the cluster actor is published and reached untyped (warren-node,
/// cluster_join.cpp), so no signature list is compared.
using cluster_actor_type = cluster_membership_api::extend_with<cluster_metadata_api>;

/// The typed view of a cluster actor held as caf::actor.
inline cluster_actor_type cluster_handle(const caf::actor& cluster) {
  return caf::actor_cast<cluster_actor_type>(cluster);
}

}  // namespace warren
