// The node actor's parts, shared by node_actor.cpp (logins, vhosts, listings, definitions) and
// node_users.cpp (users and permissions) and node_cluster.cpp (the cluster); nothing else
// includes this.
#pragma once

#include "actors/node/node_actor.hpp"
#include "actors/vhost/vhost_actor.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <caf/error.hpp>

#include <functional>

#include <string>
#include <vector>

namespace warren::node_parts {

using self_ptr = node_self;

/// The asking connection's user, or empty (the node's own askers).
std::string requester(self_ptr self);
/// ACCESS_REFUSED unless the asking connection's user is tagged administrator.
caf::error require_admin(self_ptr self, const char* what);
/// Stores `batch`; the promise is answered once it is committed.
caf::result<void> store(self_ptr self, std::vector<persistence::meta_mutation> batch);

persistence::meta_mutation user_change(const user_record& u, bool erase);
persistence::meta_mutation permission_change(const permission_record& p, bool erase);

/// Drops the permissions whose (user, vhost) key matches, adding their erasure to `batch`.
template <class Match>
void forget_permissions(node_state& st, std::vector<persistence::meta_mutation>& batch,
                        Match match) {
  for (auto p = st.permissions.begin(); p != st.permissions.end();) {
    if (!match(p->first)) {
      ++p;
      continue;
    }
    batch.push_back(permission_change(p->second, true));
    p = st.permissions.erase(p);
  }
}

/// Puts `defs`' users, vhosts (with their limits) and permissions into the node's state; returns
/// the records to store (node_actor.cpp).
std::vector<persistence::meta_mutation> apply_definitions(self_ptr self, const definitions& defs);

// --- vhosts (node_vhosts.cpp) -------------------------------------------------------------------

/// Starts the actor of vhost `name`, handing it its limits and the cluster.
void spawn_vhost(self_ptr self, const std::string& name, vhost_recovery recovered);
/// Vhost `name`'s LMDB record (with its limits), or its erasure.
persistence::meta_mutation vhost_record(const std::string& name, bool erase,
                                        const vhost_limits& limits = {});
/// Stops vhost `name` (its actor deletes its queues and their records) and, `stored_here`,
/// drops its record and its permissions here (not when the log has dropped them); `done` once
/// all that is stored.
void drop_vhost(self_ptr self, const std::string& name, bool stored_here,
                std::function<void(caf::error)> done);
caf::result<void> add_vhost(self_ptr self, const std::string& name);  // administrators
caf::result<void> delete_vhost(self_ptr self, const std::string& name);
caf::result<void> set_vhost_limits(self_ptr self, const std::string& name,
                                   const vhost_limits& limits);
caf::result<vhost_limits> vhost_limits_of(self_ptr self, const std::string& name);
std::vector<std::string> vhost_names(const node_state& st);

// --- users and permissions (node_users.cpp), each for administrators --------------------------

caf::result<void> add_user(self_ptr self, const std::string& name, const std::string& password,
                           const std::vector<std::string>& tags);
caf::result<void> change_password(self_ptr self, const std::string& name,
                                  const std::string& password);
caf::result<void> delete_user(self_ptr self, const std::string& name);
caf::result<std::vector<user_record>> list_users(self_ptr self);
caf::result<void> set_permissions(self_ptr self, const permission_record& p);
caf::result<void> clear_permissions(self_ptr self, const std::string& user,
                                    const std::string& vhost);
caf::result<std::vector<permission_record>> list_permissions(self_ptr self);

// --- capability grants (node_grants.cpp) -----------------------------------------------------

/// Takes the stored grants at start-up: expired ones are deleted, the others expire on time.
void restore_grants(self_ptr self, std::vector<grant_record> grants);
/// A new grant of the asking connection's user in its vhost, once stored: its token.
caf::result<std::string> mint_grant(self_ptr self, grant_record what, int64_t ttl_s);
/// The asker's grants; every grant for administrators. Token hashes are left out.
caf::result<std::vector<grant_record>> list_grants(self_ptr self);
/// Deletes the grant of a whole token or its 8-digit prefix (hex) and closes the connections
/// logged in by it (its creator or an administrator).
caf::result<void> revoke_grant(self_ptr self, const std::string& token);
void expire_grant(self_ptr self, const std::string& hash);
/// `user` lost its access (deleted; or, given `vhost`, its permissions there cleared): its open
/// connections (there) are closed with `reason`, and the grants it made (there) are revoked.
void access_withdrawn(self_ptr self, const std::string& user, const std::string* vhost,
                      const std::string& reason);
/// Why `hello` (with a grant_token) may not log in, or empty; then `hello` carries the grant's
/// user and vhost, `rights` what the grant allows and `grant` the grant (without its hash).
std::string grant_login(self_ptr self, client_hello& hello, permission_record& rights,
                        grant_record& grant);

// --- users and permissions in the metadata log (node_log_changes.cpp) ----------------------------

/// Whether users and permissions change through the cluster's metadata log here (a clustered
/// node with a log, once it or a member it met holds one with the cluster's users) rather than by
/// sharing changes with the members. A cluster whose log never formed keeps the old way.
bool log_backed(const node_state& st);
/// Whether users and permissions come only from the log: once it holds them (seeded). Until then
/// (a member that joined, its log catching up) the members' views bring them as before.
bool users_from_log_only(const node_state& st);
/// From the cluster actor: a member holds the log (so changes go through it, also before this
/// node's own log caught up).
void cluster_keeps_a_log(self_ptr self);
/// Takes the users and permissions out of a change shared the old way: the log carries them.
void strip_log_owned(access_change& change);
/// A reply for why the log did not take a change: a refused condition is the caller's
/// `conflict(i)`; a change no member could store, PRECONDITION_FAILED; a minority, a lost
/// leader or a closing log are the node's state, for a retry (RESOURCE_ERROR "`not_done`: why").
caf::error log_refusal(const std::string& not_done, const std::string& error,
                       const std::function<caf::error(size_t condition)>& conflict);
/// Proposes `entry` through the cluster actor: `done` hears "" once this node applied it.
void propose(self_ptr self, persistence::metadata_entry entry,
             std::function<void(const std::string& error)> done);
/// Answers once `entry` is applied here; a refused condition is answered with `conflict(i)`.
caf::result<void> change_through_log(self_ptr self, persistence::metadata_entry entry,
                                     std::function<caf::error(size_t condition)> conflict);
/// `done` hears "" once this node applied every entry the log committed before the call (at
/// once when it keeps no log), or why not.
void sync_then(self_ptr self, std::function<void(const std::string& error)> done);
/// sync_then for a connection: RESOURCE_ERROR "metadata not synced: ..." when it fails.
caf::result<void> sync_metadata(self_ptr self);
/// Drops a user's permissions in a vhost from memory, closing what they let in.
void forget_permission(self_ptr self, const std::string& user, const std::string& vhost);
/// What this node's log applied (warren-node's token checked): its users and permissions.
void log_applied(self_ptr self, uint64_t token,
                 const std::vector<persistence::meta_mutation>& changes, bool whole);
/// From warren-node, before the cluster starts: the log runs, and its changes carry `token`;
/// `seeded`: it holds the cluster's users already (else from its first seed or snapshot on).
void use_metadata_log(self_ptr self, uint64_t token, bool seeded);
/// A vhost's log entry (durable exchanges), proposed for it: "" once every entry this node
/// applied up to it went to its vhosts, or why not.
caf::result<std::string> propose_for_vhost(self_ptr self, const std::string& entry);
/// Once the node is log-backed, each running vhost (or `only` one) hears that durable
/// exchanges follow the log, and whom to propose through.
void vhosts_follow_log(self_ptr self, const caf::actor* only = nullptr);
/// What the log applied to `vhost`'s durable exchanges while it was to restart, to its new
/// actor.
void replay_exchanges(self_ptr self, const std::string& vhost);

// --- vhosts in the metadata log (node_log_vhosts.cpp) --------------------------------------------

/// The log added vhost `name`, or changed its limits: started, or told.
void vhost_put_by_log(self_ptr self, const std::string& name, const vhost_limits& limits);
/// The log deleted vhost `name` (and its records): its permissions go, its actor stops.
void vhost_erased_by_log(self_ptr self, const std::string& name);
/// A seed or a snapshot's vhosts (among `records`) replace ours.
void vhosts_replaced_by_log(self_ptr self, const std::vector<persistence::meta_mutation>& records);
/// Runs `then` once vhost `name`'s actor, deleted by the log, has stopped (at once if none is).
void when_vhost_stopped(self_ptr self, const std::string& name, std::function<void()> then);
/// Whether `retry` was parked because vhost `vhost` is not here yet but may be in the log: it
/// runs once this node synced with the log (and a deleted vhost of that name stopped), in
/// arrival order with the rest parked for the vhost, told whether the vhost is here then (false:
/// dropped, logged; a request is to be answered). False: go on at once.
bool wait_for_vhost(self_ptr self, const std::string& vhost, std::function<void(bool)> retry);

// --- the cluster (node_cluster.cpp) -------------------------------------------------------------

/// What the cluster actor tells and asks the node.
node_cluster_api::behavior_type cluster_behavior(self_ptr self);

caf::result<std::vector<node_info>> list_nodes(self_ptr self);
caf::result<void> forget_node(self_ptr self, const std::string& name);  // administrators
/// The cluster actor and this node's name, handed on to every vhost.
void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& name);
/// Other members' queues, each for its vhost (unknown vhosts are skipped).
void placements_arrived(self_ptr self, const std::string& from,
                        std::vector<queue_placement>& placements, bool complete);
void queue_removed(self_ptr self, const std::string& vhost, const std::string& queue,
                   const std::string& node);
/// A member went down (down = true: its queues come back with it) or was forgotten.
void node_gone(self_ptr self, const std::string& node, bool down);
/// Exchanges and bindings declared on member `from`, applied to our vhost of that name.
void apply_changes(self_ptr self, const std::string& from, const std::string& vhost,
                   std::vector<topology_change>& changes);
/// A queue a member asked to have created here (declare-queue --node), with its placement.
caf::result<queue_info, queue_placement> declare_for_member(self_ptr self, const std::string& vhost,
                                                            queue_spec& spec);
/// Our users, vhosts, permissions and every vhost's exchanges and bindings, for a member that
/// came up (a vhost that does not answer is left out, so the taker keeps its own of it).
caf::result<metadata_view> metadata_of(self_ptr self);
/// A member's view taken in place of ours (the cluster actor decided we are behind): what it
/// lacks goes, what it has comes, vhost by vhost.
void adopt_metadata(self_ptr self, metadata_view& view);
/// Users, vhosts and permissions changed here: every member applies the change too.
void share_access(self_ptr self, access_change change);
access_change vhost_deleted(const std::string& name);
/// A change from member `from`.
void apply_access(self_ptr self, const std::string& from, access_change& change);

}  // namespace warren::node_parts
