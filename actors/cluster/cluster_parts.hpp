// What the cluster actor's files share: cluster_actor.cpp (the behaviour, placements, the
// metadata views and replicated changes) and cluster_join.cpp (joining and being joined).
#pragma once

#include "actors/cluster/cluster_actor.hpp"
#include "core/log.hpp"

#include <chrono>
#include <string>

namespace warren::cluster_parts {

/// How long a peer has to answer a request before it counts as unreachable.
constexpr auto peer_timeout = std::chrono::seconds(5);

inline void note(log_level level, const std::string& text) {
  log(level, "cluster", text);
}

inline std::string describe_member(const cluster_member& m) {
  return m.name + " at " + m.address;
}

// --- cluster_actor.cpp ---------------------------------------------------------------------------

/// Sends member `name` our whole metadata view, then what was held back for it meanwhile.
void send_view(cluster_self self, const std::string& name);

// --- cluster_raft.cpp ---------------------------------------------------------------------------

/// A frame of this node's log for member `to` (the relay's token checked).
void raft_frame_out(cluster_self self, uint64_t token, const std::string& to,
                    persistence::raft_frame& frame);
/// A frame from a member's log; the member is the one whose node sent it.
void raft_frame_in(cluster_self self, persistence::raft_frame& frame);
/// Runs every second: logs a change of the log's leader, and on the leader adds a running member
/// that is not a voter, or removes a configured node that is no member (forgotten); one change
/// at a time.
void raft_tick(cluster_self self);
/// Fills in the metadata log's columns of `list nodes` (rows[0] is this node).
void raft_fill_rows(cluster_self self, std::vector<node_info>& rows);

// --- cluster_proposals.cpp ----------------------------------------------------------------------

/// A change made on this node (an entry's bytes): "" once the log committed it and this node
/// applied it, or why not.
caf::result<std::string> propose_here(cluster_self self, std::string entry);
/// "" once this node applied every entry the log committed before the call (an empty entry
/// through the leader, answered only by its apply here), or why not.
caf::result<std::string> sync_here(cluster_self self);
/// A change a member forwarded to us as the leader: why not, and the entry's index.
caf::result<std::string, uint64_t> propose_for_member(cluster_self self, std::string entry);
/// This node's log answered proposal `id` (the relay's token checked).
void proposal_answered(cluster_self self, uint64_t token, uint64_t id, const std::string& error,
                       uint64_t index);
/// This node's log applied proposal `id`'s entry.
void proposal_applied(cluster_self self, uint64_t token, uint64_t id, const std::string& error);

// --- cluster_join.cpp ----------------------------------------------------------------------------

/// Joins the --join addresses not reached yet and the members that are down; runs every second.
void reconnect(cluster_self self);
/// Stops the connector of `address` once no member has that address (forgotten, or moved).
void drop_connector(cluster_self self, const std::string& address);
/// Answers a join request: the peer proved the secret (else ACCESS_REFUSED naming why).
caf::result<join_reply> accept_join(cluster_self self, const join_request& req,
                                    const caf::actor& peer);

}  // namespace warren::cluster_parts
