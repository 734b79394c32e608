// Cluster actor: this node's membership in a cluster of Warren nodes, over CAF's middleman.
// warren-node publishes it on the cluster port; other nodes reach it with remote_actor and
// join by proving they hold the shared secret (cluster_auth.hpp). Every member joins every other
// (a full mesh), monitors them, and reconnects to those that went down. Members are stored in
// LMDB so that a restarted node finds its cluster again without being told.
//
// Requests (declared as code in cluster_protocol.hpp):
//   (hello_atom)                              -> nonce      from a node about to join
//   (join_atom, join_request, its actor)      -> join_reply every member, or ACCESS_REFUSED
//                                                naming what was wrong (the secret, a name in
//                                                use at another address)
//   (stats_atom)                              -> uint32     queues living on this node
//   (list_atom, nodes_atom)                   -> node_info rows, this node first
//   (forget_atom, name)                       -> void       a member that is down, for good;
//                                                every running member forgets it too
//   (forget_atom, from, name)                 from a member that forgot `name`
//   (declare_atom, node, vhost, spec)         -> (queue_info, queue_placement)  a queue created
//                                                on member `node` (declare-queue --node);
//                                                NOT_FOUND when it is unknown or down
//   (declare_atom, vhost, spec)               -> the same, from a member: created here
//   (ready_atom)                              -> void       once joined (at once without --join);
//                                                ACCESS_REFUSED when a node refused us
// Queue placements: this node's vhosts report their queues (placed_atom, queue_placement) /
// (removed_atom, vhost, name); the cluster actor sends them to every member, and all of them to a
// member as it comes up. What members send (placed_atom, from, placements, complete) /
// (removed_atom, from, vhost, name) goes to the node, which hands it to the vhost; a complete list
// also says that a queue of `from` not in it is gone. A member going down or forgotten is
// told to the node as (down_atom, name) / (removed_atom, name).
//
// Shared metadata (users, vhosts, permissions, exchanges, bindings): every change made here goes
// out through this actor to every running member, and every change from one comes in through it,
// so it counts them all: the metadata version, stored in LMDB. Members that meet send each other
// their whole view (metadata_view) with their version. The one that is behind takes the other's
// view in place of its own, deletions included: a member that was down catches up, and what was
// deleted while it was away does not come back. "Behind" means a lower version, or with equal
// versions the higher node name (views that are equal change nothing then). A node joining a
// cluster for the first time takes the first view it gets whatever the versions, and its own
// view is taken by no one. Changes for a member whose view is being put together are held back
// and sent right after it, so the member never takes a view older than a change it already has.
//
// The metadata log (issue 33): raft's frames between members go through this actor (raft_atom;
// raft_relay.hpp), and the log's leader keeps the log's voters equal to the members: a member
// that is up and not yet a voter is added, one forgotten is removed (cluster_raft.cpp).
//
// Caveats: after a network split, the side with fewer changes since the split loses them when
// the two meet again (as RabbitMQ's autoheal restarts the losing side); queues are not part of
// this (each lives on its home node). A change a node makes in the moment between meeting a
// member it is behind and taking that member's view can be undone on it (not on the member).
#pragma once

#include "actors/cluster/raft_relay.hpp"
#include "actors/common/cluster_protocol.hpp"

#include <caf/io/middleman_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>

namespace warren {

/// What warren-node tells the cluster actor at start-up.
struct cluster_config {
  cluster_member self;                 // this node's name and cluster address
  std::string secret;                  // shared by every member
  std::vector<std::string> join;       // HOST:PORT of nodes to join (--join)
  std::vector<cluster_member> stored;  // members found in LMDB
  uint64_t metadata_version = 0;       // found in LMDB
  bool first_join = false;             // --join with no members stored: take the cluster's view
  bool loopback_only = true;           // no TLS on the link: reach other nodes on loopback only
  // Makes a middleman actor that connects to other nodes: one per peer address (peer_connector).
  std::function<caf::io::middleman_actor()> new_connector;
  caf::actor node;                   // counts this node's queues
  caf::actor persistence;            // stores member records
  std::shared_ptr<raft_relay> raft;  // this node's metadata log, once made (never null)
};

struct cluster_state {
  struct member {
    cluster_member info;
    caf::actor handle;     // its cluster actor while running
    bool has_log = false;  // it held a metadata log when we last met it
  };

  cluster_config config;
  std::map<std::string, member> members;  // by name; never this node
  uint64_t metadata_version = 0;          // shared-metadata changes made or applied here
  bool first_join = false;                // no member's view taken yet, on a first join
  // Members whose view from us is being put together: changes for them wait here until it went.
  std::map<std::string, std::vector<std::function<void(const caf::actor&)>>> held;
  std::map<std::pair<std::string, std::string>, queue_placement> placements;  // ours, by vhost+name
  std::set<std::string> join_pending;  // --join addresses not reached yet
  // Members learned while joining, not met yet: the ready line waits for them (or for one failed
  // attempt each), so that the cluster listed right after it is the whole mesh.
  std::set<std::string> mesh_pending;
  bool reached = false;                          // one --join address answered
  std::set<std::string> connecting;              // addresses a join is under way to
  std::map<std::string, caf::actor> connectors;  // by peer address (peer_connector)
  std::deque<std::string> nonces;                // handed out, not yet used (the newest few)
  std::vector<caf::typed_response_promise<void>> waiting_ready;
  // Failed joins by address, so that an unreachable node is logged now and then, not each second.
  std::shared_ptr<std::map<std::string, int>> failures =
      std::make_shared<std::map<std::string, int>>();
  bool joined = false;
  // Nodes in the metadata log's configuration that are no member, with the ticks they have
  // been so (the leader removes them after a while: cluster_raft.cpp).
  std::map<std::string, int> raft_strangers;
  std::string raft_leader;      // the log's leader at the last tick, for the log
  std::string raft_last_added;  // the member last made a voter: additions take turns
  // Changes through the metadata log under way (cluster_proposals.cpp), by number.
  struct proposal {
    std::string entry;  // its bytes
    bool from_member = false;
    caf::typed_response_promise<std::string> local;             // made on this node
    caf::typed_response_promise<std::string, uint64_t> member;  // forwarded to us as leader
    int forwards = 0;
    bool sync = false;  // an empty entry for a linearizable read: only an apply here answers it
    std::vector<caf::typed_response_promise<std::string>> sharing;  // a sync's other askers
    // A condition that did not hold: the answer, given once this node applied the entry too
    // (and so every entry before it: whoever asks reads here what made it fail).
    std::string refusal;
  };
  std::map<uint64_t, proposal> proposals;
  uint64_t next_proposal = 1;
  // One sync at a time: those asked meanwhile share the next (cluster_proposals.cpp).
  uint64_t sync_under_way = 0;  // its proposal's number, 0 for none
  std::chrono::steady_clock::time_point sync_started;
  std::vector<caf::typed_response_promise<std::string>> next_sync;
  caf::error refused;  // a node refused us: start-up fails with it

  static inline const char* name = "cluster";
};

using cluster_self = cluster_actor_type::stateful_pointer<cluster_state>;

cluster_actor_type::behavior_type cluster_actor(cluster_self self, cluster_config config);

}  // namespace warren
