// The node actor's interface, declared once as CAF typed_actor signatures (node_actor.hpp
// describes each message). Senders that hold the node as caf::actor go through node_handle() so
// that a request it does not take, or a reply of the wrong type, fails to compile.
#pragma once

#include "actors/common/cluster_protocol.hpp"
#include "actors/common/protocol.hpp"
#include "persistence/lmdb_store.hpp"

#include <caf/actor_cast.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace warren {

/// Logging in, and what warren-node tells the node at start-up.
using node_login_api = caf::typed_actor<
    // logging in: the vhost, the node's settings, the user's permissions there and, for a login
    // by a grant's token, the grant (without its hash; else empty)
    caf::replies_to<connect_atom, client_hello, caf::actor>::with<caf::actor, connection_settings,
                                                                  permission_record, grant_record>,
    // checking a user's password (the management door's basic auth): the user's tags and the
    // vhosts it has permissions in
    caf::replies_to<auth_atom, client_hello>::with<std::vector<std::string>,
                                                   std::vector<std::string>>,
    // from warren-node at start-up (the cluster actor, with this node's name)
    caf::reacts_to<alarm_atom, caf::actor>, caf::reacts_to<settings_atom, connection_settings>,
    caf::reacts_to<ready_atom>, caf::reacts_to<cluster_atom, caf::actor, std::string>,
    // from warren-node before the cluster starts: users and permissions follow the metadata
    // log (once it holds them: seeded), whose changes come with this token
    caf::reacts_to<metalog_atom, uint64_t, bool>,
    // from the cluster actor: a member holds the metadata log
    caf::reacts_to<metalog_atom, bool>>;

/// The cluster: what the cluster actor tells and asks the node (node_cluster.cpp).
using node_cluster_api = caf::typed_actor<
    // from the cluster actor: other members' queues, members down or forgotten
    caf::reacts_to<placed_atom, std::string, std::vector<queue_placement>, bool>,  // see cluster
    caf::reacts_to<removed_atom, std::string, std::string, std::string>,  // vhost, queue, node
    caf::reacts_to<removed_atom, std::string>, caf::reacts_to<down_atom, std::string>,
    // exchanges and bindings: changes from a member (its name, vhost, changes)
    caf::reacts_to<replicate_atom, std::string, std::string, std::vector<topology_change>>,
    // users, vhosts and permissions changed on a member (its name, the change)
    caf::reacts_to<replicate_atom, std::string, access_change>,
    // from the cluster actor: our shared metadata, for a member that came up (it fills in who
    // and which version); a member's, to take in place of ours
    caf::replies_to<view_atom>::with<metadata_view>, caf::reacts_to<adopt_atom, metadata_view>,
    // a member asking for a queue to be created here (vhost, declaration): with its placement
    caf::replies_to<declare_atom, std::string, queue_spec>::with<queue_info, queue_placement>,
    // a member about to create a queue (its name, vhost, declaration)
    caf::replies_to<claim_atom, std::string, std::string, queue_spec>::with<claim_reply>,
    // the cluster: its members, forgetting a dead one (administrators)
    caf::replies_to<list_atom, nodes_atom>::with<std::vector<node_info>>,
    caf::reacts_to<forget_atom, std::string>,
    // from this node's metadata log (its token): what an applied entry changed, or (true) every
    // record after a seed or a snapshot
    caf::reacts_to<applied_atom, uint64_t, std::vector<persistence::meta_mutation>, bool>,
    // from a vhost: a log entry (encoded) to propose; "" once the node has passed the vhost
    // every entry applied up to it, or why not
    caf::replies_to<propose_atom, std::string>::with<std::string>>;

/// Administration, listings and statistics.
using node_admin_api = caf::typed_actor<
    // users and permissions (administrators)
    caf::reacts_to<declare_atom, user_atom, std::string, std::string, std::vector<std::string>>,
    caf::reacts_to<settings_atom, user_atom, std::string, std::string>,
    caf::reacts_to<delete_atom, user_atom, std::string>,
    caf::replies_to<list_atom, user_atom>::with<std::vector<user_record>>,
    caf::reacts_to<declare_atom, permission_atom, permission_record>,
    caf::reacts_to<delete_atom, permission_atom, std::string, std::string>,
    caf::replies_to<list_atom, permission_atom>::with<std::vector<permission_record>>,
    // capability grants (node_grants.cpp): minted by a connection for its user and vhost (what,
    // ttl in seconds) -> the token; listed; revoked by a token or its prefix; a grant's expiry
    caf::replies_to<grant_atom, grant_record, int64_t>::with<std::string>,
    caf::replies_to<list_atom, grant_atom>::with<std::vector<grant_record>>,
    caf::reacts_to<revoke_atom, std::string>, caf::reacts_to<expire_atom, std::string>,
    // vhosts
    caf::reacts_to<declare_atom, vhost_atom, std::string>,
    caf::reacts_to<delete_atom, vhost_atom, std::string>,
    caf::replies_to<list_atom, vhost_atom>::with<std::vector<std::string>>,
    caf::reacts_to<settings_atom, vhost_atom, std::string, vhost_limits>,
    caf::replies_to<settings_atom, vhost_atom, std::string>::with<vhost_limits>,
    // definitions
    caf::replies_to<export_atom>::with<definitions>, caf::reacts_to<import_atom, definitions>,
    // listings and statistics, node-wide
    caf::replies_to<list_atom, queues_atom>::with<std::vector<queue_info>>,
    caf::replies_to<list_atom, conns_atom>::with<std::vector<connection_info>>,
    caf::replies_to<stats_atom>::with<node_stats_info>,
    // answered once this node applied what the metadata log committed before (linearizable reads)
    caf::reacts_to<sync_atom, metalog_atom>>;

/// The node actor's whole interface.
using node_actor_type = node_login_api::extend_with<node_cluster_api, node_admin_api>;

/// The typed view of the node actor held as caf::actor.
inline node_actor_type node_handle(const caf::actor& node) {
  return caf::actor_cast<node_actor_type>(node);
}

}  // namespace warren
