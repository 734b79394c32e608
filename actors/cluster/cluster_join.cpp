// Joining a cluster and being joined: a node proves the shared secret to a member's cluster
// actor (hello, then join with a proof over the member's nonce), the member proves it back, and
// each records the other as running. A node told to --join is ready once it reached one of those
// addresses and met every member learned from it. See cluster_actor.hpp for the whole model.
#include "actors/cluster/cluster_auth.hpp"
#include "actors/cluster/cluster_parts.hpp"
#include "actors/cluster/peer_connector.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/node_protocol.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "persistence/metadata_codec.hpp"

#include <caf/io/middleman_actor.hpp>

#include <algorithm>
#include <chrono>

namespace warren::cluster_parts {

namespace {

constexpr auto reconnect_interval = std::chrono::seconds(1);

void store_member(cluster_self self, const cluster_member& m) {
  using persistence::meta_mutation;
  using persistence::meta_table;
  std::vector<meta_mutation> batch{
      {meta_table::members, persistence::member_key(m.name), persistence::encode_member(m), false}};
  persist(self, self->state.config.persistence, std::move(batch), [=](const caf::error& err) {
    if (err)
      note(log_level::error, "could not store member " + m.name + ": " + to_string(describe(err)));
  });
}

void answer_ready(cluster_self self, const caf::error& err) {
  for (auto& rp : self->state.waiting_ready) {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
  }
  self->state.waiting_ready.clear();
}

// Records `m` as a running member reached through `handle` (its cluster actor), and stores it
// when it is new or moved.
// A join that proved itself always gets our placements and view, also from a handle we had: its
// earlier join may have timed out on its side after we sent them, and then it dropped them.
void add_running(cluster_self self, const cluster_member& m, const caf::actor& handle,
                 bool has_log) {
  auto& st = self->state;
  auto [it, added] = st.members.try_emplace(m.name);
  auto& entry = it->second;
  entry.has_log = has_log;
  // The node then makes its metadata changes through the log, also before its own log has
  // caught up (cluster_proposals.cpp forwards them to a member whose log runs).
  if (has_log && st.config.node) self->send(node_handle(st.config.node), metalog_atom::value, true);
  st.config.raft->member_up(m.name);
  if (added || entry.info.address != m.address) {
    auto moved_from = entry.info.address;
    entry.info = m;
    store_member(self, m);
    drop_connector(self, moved_from);
  }
  if (entry.handle != handle) {
    if (entry.handle) self->demonitor(entry.handle);
    bool was_down = !entry.handle;
    entry.handle = handle;
    self->monitor(handle);
    if (was_down) note(log_level::info, "node " + describe_member(m) + " is up");
  }
  // It learns where our queues are (again: a restarted member knows nothing).
  std::vector<queue_placement> ours;
  for (const auto& [key, p] : st.placements) ours.push_back(p);
  self->send(cluster_handle(handle), placed_atom::value, st.config.self.name, std::move(ours),
             true);
  send_view(self, m.name);
}

// A member we only heard of (from another member's list): stored, joined by the next tick.
void learn_member(cluster_self self, const cluster_member& m) {
  auto& st = self->state;
  if (m.name == st.config.self.name) return;
  auto [it, added] = st.members.try_emplace(m.name);
  if (!added && it->second.info.address == m.address) return;
  auto moved_from = it->second.info.address;
  it->second.info = m;
  store_member(self, m);
  drop_connector(self, moved_from);
}

void join_address(cluster_self self, const std::string& address);

// Ready once a --join address answered and every member learned from it was met, or could not
// be reached once (a member that is down does not hold the node back).
void ready_when_meshed(cluster_self self) {
  auto& st = self->state;
  if (st.joined || !st.reached || !st.mesh_pending.empty()) return;
  st.joined = true;
  answer_ready(self, caf::error{});
}

void joined_through(cluster_self self, const std::string& address) {
  auto& st = self->state;
  st.join_pending.erase(address);
  st.mesh_pending.erase(address);
  if (st.joined) return;
  if (!st.reached) {
    st.reached = true;
    // Meet the members learned from it now, not at the next tick. All are pending before the
    // first join starts: one that fails at once must not make the node ready early.
    for (const auto& [name, m] : st.members)
      if (!m.handle && !m.info.address.empty()) st.mesh_pending.insert(m.info.address);
    for (const auto& address : std::set<std::string>(st.mesh_pending)) join_address(self, address);
  }
  ready_when_meshed(self);
}

void join_failed(cluster_self self, const std::string& address, const caf::error& err,
                 std::map<std::string, int>& failures) {
  auto& st = self->state;
  if (st.mesh_pending.erase(address) != 0) ready_when_meshed(self);
  auto failure = describe(err);
  if (failure.code == reply_code::access_refused) {
    note(log_level::error, address + " refused this node: " + failure.text);
    // A restarted member (it knows its members) does not stop for that, nor keep knocking.
    if (st.joined && st.join_pending.erase(address) != 0) {
      note(log_level::warn, "not joining " + address + " again: it refused this node");
      return;
    }
    if (st.join_pending.count(address) != 0 && !st.reached) {  // none of --join took us
      st.refused =
          make_broker_error(reply_code::access_refused, "joining " + address + ": " + failure.text);
      answer_ready(self, st.refused);
    }
    return;
  }
  // Unreachable nodes are retried every second; say so on the first failure and now and then.
  if (failures[address]++ % 30 == 0)
    note(log_level::warn, "cannot reach " + address + " (retrying): " + failure.text);
}

// Proves the secret to the cluster actor `peer` (reached at `address`) and joins it.
void send_join(cluster_self self, const std::string& address, cluster_actor_type peer,
               std::shared_ptr<std::map<std::string, int>> failures) {
  self->request(peer, peer_timeout, hello_atom::value)
      .then(
          [=](std::string& nonce) {
            auto& st = self->state;
            auto challenge = make_nonce();
            join_request req{st.config.self, nonce,
                             cluster_proof(st.config.secret, "join", nonce, st.config.self.name),
                             challenge, st.config.raft->holds_log()};
            self->request(peer, peer_timeout, join_atom::value, std::move(req),
                          caf::actor_cast<caf::actor>(self))
                .then(
                    [=](join_reply& reply) {
                      auto& st = self->state;
                      st.connecting.erase(address);
                      auto expected =
                          cluster_proof(st.config.secret, "welcome", challenge, reply.member.name);
                      if (!proofs_equal(expected, reply.proof)) {
                        join_failed(self, address,
                                    make_broker_error(reply_code::access_refused,
                                                      "it could not prove the cluster secret"),
                                    *failures);
                        return;
                      }
                      failures->erase(address);
                      add_running(self, reply.member, caf::actor_cast<caf::actor>(peer),
                                  reply.has_log);
                      for (const auto& m : reply.members) learn_member(self, m);
                      joined_through(self, address);
                    },
                    [=](caf::error& err) {
                      self->state.connecting.erase(address);
                      join_failed(self, address, err, *failures);
                    });
          },
          [=](caf::error& err) {
            self->state.connecting.erase(address);
            join_failed(self, address, err, *failures);
          });
}

// Connects to the cluster listener at `address` and joins the node there.
void join_address(cluster_self self, const std::string& address) {
  auto& st = self->state;
  if (st.connecting.count(address) != 0) return;
  std::string host, error;
  uint16_t port = 0;
  if (!split_address(address, host, port, error)) {
    note(log_level::error, "cannot join: " + error);
    st.join_pending.erase(address);
    if (st.mesh_pending.erase(address) != 0) ready_when_meshed(self);
    return;
  }
  if (st.config.loopback_only && !is_loopback_host(host)) {
    note(log_level::error,
         "not joining " + address + ": without cluster TLS, nodes are reached on loopback only");
    st.join_pending.erase(address);
    if (st.mesh_pending.erase(address) != 0) ready_when_meshed(self);
    return;
  }
  st.connecting.insert(address);
  auto failures = st.failures;
  auto connector = st.connectors.find(address);
  if (connector == st.connectors.end())
    connector =
        st.connectors
            .emplace(address, self->spawn<caf::linked>(peer_connector, st.config.new_connector()))
            .first;
  self->request(connector->second, peer_timeout, caf::connect_atom::value, host, port)
      .then(
          [=](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
            if (!ptr || ptr->address() == self->address()) {  // no one there, or ourselves
              self->state.connecting.erase(address);
              joined_through(self, address);
              return;
            }
            send_join(self, address, caf::actor_cast<cluster_actor_type>(ptr), failures);
          },
          [=](caf::error& err) {
            self->state.connecting.erase(address);
            join_failed(self, address, err, *failures);
          });
}

// Checks a join request; a refusal names what was wrong and is logged here too.
caf::error check_join(cluster_self self, const join_request& req, const caf::actor& peer) {
  auto& st = self->state;
  auto refuse = [&](const std::string& why) {
    note(log_level::warn, "refused " + describe_member(req.member) + ": " + why);
    return make_broker_error(reply_code::access_refused, why);
  };
  if (st.config.secret.empty()) return refuse("this node has no cluster secret");
  const auto& sender = self->current_sender();
  if (!peer || !sender || peer.node() != sender->node())
    return refuse("the cluster actor it names is not on the node that sent the join");
  auto nonce = std::find(st.nonces.begin(), st.nonces.end(), req.nonce);
  if (nonce == st.nonces.end()) {
    // Not a refusal: other peers' hellos may have pushed it out; the joining node asks again.
    note(log_level::warn, "join of " + describe_member(req.member) + " with an unknown nonce");
    return make_broker_error(reply_code::resource_locked, "unknown or used nonce; ask again");
  }
  st.nonces.erase(nonce);
  auto expected = cluster_proof(st.config.secret, "join", req.nonce, req.member.name);
  if (!proofs_equal(expected, req.proof)) return refuse("wrong cluster secret");
  if (req.member.name == st.config.self.name)
    return refuse("'" + req.member.name + "' is this node's own name");
  auto known = st.members.find(req.member.name);
  if (known != st.members.end() && known->second.handle &&
      known->second.info.address != req.member.address)
    return refuse("the name '" + req.member.name + "' is in use by the running node at " +
                  known->second.info.address);
  return {};
}

}  // namespace

void drop_connector(cluster_self self, const std::string& address) {
  auto& st = self->state;
  auto connector = st.connectors.find(address);
  if (connector == st.connectors.end() || st.join_pending.count(address) != 0) return;
  for (const auto& [name, m] : st.members)
    if (m.info.address == address) return;
  self->unlink_from(connector->second);
  self->send_exit(connector->second, caf::exit_reason::user_shutdown);
  st.connectors.erase(connector);
}

void reconnect(cluster_self self) {
  auto& st = self->state;
  if (st.refused) return;
  for (const auto& address : std::set<std::string>(st.join_pending)) join_address(self, address);
  for (auto& [name, m] : st.members)
    if (!m.handle) join_address(self, m.info.address);
  raft_tick(self);
  self->delayed_send(self, reconnect_interval, tick_atom::value);
}

caf::result<join_reply> accept_join(cluster_self self, const join_request& req,
                                    const caf::actor& peer) {
  if (auto err = check_join(self, req, peer)) return err;
  auto& st = self->state;
  join_reply reply;
  reply.member = st.config.self;
  reply.proof = cluster_proof(st.config.secret, "welcome", req.challenge, st.config.self.name);
  reply.has_log = st.config.raft->holds_log();
  for (const auto& [name, m] : st.members)
    if (name != req.member.name) reply.members.push_back(m.info);
  // The reply goes first: the joining node trusts us once it has it, and add_running sends our
  // placements and view right away.
  auto rp = self->make_response_promise<join_reply>();
  rp.deliver(std::move(reply));
  add_running(self, req.member, peer, req.has_log);
  return rp;
}

}  // namespace warren::cluster_parts
