#include "actors/cluster/cluster_actor.hpp"

#include "actors/cluster/cluster_auth.hpp"
#include "actors/cluster/cluster_parts.hpp"
#include "actors/common/behavior_parts.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/gather.hpp"
#include "actors/common/node_protocol.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "persistence/metadata_codec.hpp"

#include <caf/io/middleman_actor.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

namespace warren::cluster_parts {

namespace {

constexpr size_t max_nonces = 64;

void erase_member_record(cluster_self self, const std::string& name) {
  using persistence::meta_mutation;
  using persistence::meta_table;
  std::vector<meta_mutation> batch{{meta_table::members, persistence::member_key(name), {}, true}};
  persist(self, self->state.config.persistence, std::move(batch), [=](const caf::error& err) {
    if (err) note(log_level::error, "could not forget " + name + ": " + to_string(describe(err)));
  });
}

template <class... Ts>
void tell_node(cluster_self self, Ts&&... xs) {
  if (self->state.config.node)
    self->send(node_handle(self->state.config.node), std::forward<Ts>(xs)...);
}

// The metadata version goes to LMDB with each change, in the persistence actor's order.
void store_version(cluster_self self) {
  using persistence::meta_mutation;
  using persistence::meta_table;
  auto version = self->state.metadata_version;
  std::vector<meta_mutation> batch{{meta_table::cluster, persistence::cluster_state_key,
                                    persistence::encode_cluster_state(version), false}};
  persist(self, self->state.config.persistence, std::move(batch), [=](const caf::error& err) {
    if (err)
      note(log_level::error, "could not store metadata version " + std::to_string(version) + ": " +
                                 to_string(describe(err)));
  });
}

void count_changes(cluster_self self, size_t n) {
  self->state.metadata_version += n;
  store_version(self);
}

// Hands `send` every running member's cluster actor, or holds it for a member whose view from
// us is being put together (it goes right after the view).
void to_members(cluster_self self, const std::function<void(const caf::actor&)>& send) {
  auto& st = self->state;
  for (const auto& [name, m] : st.members) {
    if (!m.handle) continue;
    if (auto h = st.held.find(name); h != st.held.end())
      h->second.push_back(send);
    else
      send(m.handle);
  }
}

// Sends member `name` our view (if we have one: the node may fail to answer), then whatever was
// held back for it meanwhile.
void view_ready(cluster_self self, const std::string& name, std::optional<metadata_view> view) {
  auto& st = self->state;
  auto held = std::move(st.held[name]);
  st.held.erase(name);
  auto m = st.members.find(name);
  if (m == st.members.end() || !m->second.handle) return;
  if (view) self->send(cluster_handle(m->second.handle), replicate_atom::value, std::move(*view));
  for (auto& send : held) send(m->second.handle);
}

// A member's view: taken in place of ours when we are behind it, or on our first join.
void view_arrived(cluster_self self, metadata_view& view) {
  auto& st = self->state;
  if (view.first_join) return;  // a node joining for the first time gives nothing
  bool behind = view.version > st.metadata_version ||
                (view.version == st.metadata_version && view.from < st.config.self.name);
  if (!st.first_join && !behind) return;
  note(view.version == st.metadata_version && !st.first_join ? log_level::debug : log_level::info,
       "taking the metadata of " + view.from + " (its version " + std::to_string(view.version) +
           ", ours " + std::to_string(st.metadata_version) +
           (st.first_join ? ", joining for the first time)" : ")"));
  st.first_join = false;
  st.metadata_version = view.version;
  store_version(self);
  tell_node(self, adopt_atom::value, std::move(view));
}

// A queue of this node started (or restarted): every running member learns where it is.
void place_local(cluster_self self, queue_placement p) {
  auto& st = self->state;
  p.node = st.config.self.name;
  st.placements[{p.vhost, p.spec.name}] = p;
  std::vector<queue_placement> one{p};
  for (const auto& [name, m] : st.members)
    if (m.handle)
      self->send(cluster_handle(m.handle), placed_atom::value, st.config.self.name, one, false);
}

void remove_local(cluster_self self, const std::string& vhost, const std::string& name) {
  auto& st = self->state;
  st.placements.erase({vhost, name});
  for (const auto& [member, m] : st.members)
    if (m.handle)
      self->send(cluster_handle(m.handle), removed_atom::value, st.config.self.name, vhost, name);
}

// The queues that live on this node; the node's listing also holds the other members' queues.
caf::result<uint32_t> count_queues(cluster_self self) {
  auto rp = self->make_response_promise<uint32_t>();
  self->request(node_handle(self->state.config.node), peer_timeout, list_atom::value,
                queues_atom::value)
      .then(
          [=](std::vector<queue_info>& queues) mutable {
            const auto& me = self->state.config.self.name;
            auto ours = std::count_if(queues.begin(), queues.end(), [&](const queue_info& q) {
              return q.node.empty() || q.node == me;
            });
            rp.deliver(static_cast<uint32_t>(ours));
          },
          [=](caf::error& err) mutable { rp.deliver(err); });
  return rp;
}

caf::result<std::vector<node_info>> list_nodes(cluster_self self) {
  auto& st = self->state;
  struct listing {
    std::vector<node_info> rows;
    size_t left = 0;
    caf::typed_response_promise<std::vector<node_info>> rp;
  };
  auto acc = std::make_shared<listing>();
  acc->rp = self->make_response_promise<std::vector<node_info>>();
  std::vector<std::pair<size_t, caf::actor>> asked{{0, caf::actor_cast<caf::actor>(self)}};
  acc->rows.push_back({st.config.self.name, st.config.self.address, true, true, 0});
  for (const auto& [name, m] : st.members) {
    if (m.handle) asked.emplace_back(acc->rows.size(), m.handle);
    acc->rows.push_back({name, m.info.address, bool(m.handle), false, 0});
  }
  // Each running node counts its own queues; one that does not answer in time shows 0.
  acc->left = asked.size();
  auto one_done = [acc]() {
    if (--acc->left == 0) acc->rp.deliver(std::move(acc->rows));
  };
  raft_fill_rows(self, acc->rows);
  for (const auto& [row, target] : asked)
    self->request(cluster_handle(target), peer_timeout, stats_atom::value)
        .then(
            [=, row = row](uint32_t n) {
              acc->rows[row].queues = n;
              one_done();
            },
            [=](caf::error&) { one_done(); });
  return acc->rp;
}

// Asks every running member about a queue this node is about to create. A member that does not
// answer in time is counted as granting (it could not have a conflicting claim it could tell us).
caf::result<std::vector<claim_reply>> claim(cluster_self self, const std::string& vhost,
                                            const queue_spec& spec) {
  auto& st = self->state;
  std::vector<caf::actor> running;
  for (const auto& [name, m] : st.members)
    if (m.handle) running.push_back(m.handle);
  auto rp = self->make_response_promise<std::vector<claim_reply>>();
  gather<claim_reply>(
      running,
      [=](const caf::actor& peer) {
        return self->request(cluster_handle(peer), peer_timeout, claim_atom::value,
                             self->state.config.self.name, vhost, spec);
      },
      [=](std::vector<claim_reply> replies) mutable { rp.deliver(std::move(replies)); });
  return rp;
}

caf::result<void> forget(cluster_self self, const std::string& name) {
  auto& st = self->state;
  auto it = st.members.find(name);
  if (it == st.members.end())
    return make_broker_error(reply_code::not_found, "no node '" + name + "' in the cluster");
  if (it->second.handle)
    return make_broker_error(reply_code::precondition_failed,
                             "node '" + name + "' is running; stop it before forgetting it");
  auto address = it->second.info.address;
  st.members.erase(it);
  drop_connector(self, address);
  erase_member_record(self, name);
  st.config.raft->member_down(name);
  tell_node(self, removed_atom::value, name);
  note(log_level::info, "forgot node " + name);
  // Every running member forgets it too (a member that is down keeps it until told there).
  auto from = st.config.self.name;
  to_members(self, [=](const caf::actor& member) {
    self->send(cluster_handle(member), forget_atom::value, from, name);
  });
  return caf::unit;
}

// A member forgot node `name`: so do we, unless we reach it (then it is not dead for us).
void forgotten_by(cluster_self self, const std::string& from, const std::string& name) {
  auto& st = self->state;
  auto it = st.members.find(name);
  if (it == st.members.end()) return;
  if (it->second.handle) {
    note(log_level::warn, from + " forgot node " + name + ", which is running here; kept");
    return;
  }
  auto address = it->second.info.address;
  st.members.erase(it);
  drop_connector(self, address);
  erase_member_record(self, name);
  st.config.raft->member_down(name);
  tell_node(self, removed_atom::value, name);
  note(log_level::info, "forgot node " + name + " (as " + from + " did)");
}

// A change made on this node, counted and sent to every running member.
void share_change(cluster_self self, const std::string& vhost, const topology_change& change) {
  count_changes(self, 1);
  std::vector<topology_change> one{change};
  auto from = self->state.config.self.name;
  to_members(self, [=](const caf::actor& member) {
    self->send(cluster_handle(member), replicate_atom::value, from, vhost, one);
  });
}

void share_change(cluster_self self, const access_change& change) {
  count_changes(self, 1);
  auto from = self->state.config.self.name;
  to_members(self, [=](const caf::actor& member) {
    self->send(cluster_handle(member), replicate_atom::value, from, change);
  });
}

// declare-queue --node: the queue is created by member `node`, which answers the requester.
caf::result<queue_info, queue_placement> declare_on_member(cluster_self self,
                                                           const std::string& node,
                                                           const std::string& vhost,
                                                           queue_spec& spec) {
  auto m = self->state.members.find(node);
  if (m == self->state.members.end())
    return make_broker_error(reply_code::not_found, "no node '" + node + "' in the cluster");
  if (!m->second.handle)
    return make_broker_error(reply_code::not_found, "node '" + node + "' is down");
  return self->delegate(cluster_handle(m->second.handle), declare_atom::value, vhost,
                        std::move(spec));
}

// Whether the message being handled comes from an actor of this node or of a running member (one
// that proved the secret when it joined). Only hello and join are open to any peer. This keeps a
// misconfigured or stale node out; it is no defence against a hostile peer, which can forge the
// source node of a routed message in CAF 0.17: against those the boundary is the link's TLS
// (apps/cluster_link.hpp).
bool from_trusted(cluster_self self) {
  const auto& sender = self->current_sender();
  if (!sender) return false;
  auto origin = sender->node();
  if (origin == self->node()) return true;
  for (const auto& [name, m] : self->state.members)
    if (m.handle && m.handle.node() == origin) return true;
  return false;
}

// Whether the message comes from this node's own actors with the relay's token: an anonymous
// message may come from anywhere, and a peer can name a local actor as its sender; the token
// never leaves the process.
bool from_this_node(cluster_self self, uint64_t token) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node() && token == self->state.config.raft->token();
}

// Logs a message refused by from_trusted; the error answers a request.
caf::error refuse_untrusted(cluster_self self, const char* what) {
  const auto& sender = self->current_sender();
  note(log_level::warn, std::string("refused a '") + what + "' message from " +
                            (sender ? "node " + to_string(sender->node()) : "an anonymous sender") +
                            ", which is not a member of this cluster");
  return make_broker_error(reply_code::access_refused, "not a member of this cluster");
}

void on_down(cluster_self self, const caf::down_msg& dm) {
  for (auto& [name, m] : self->state.members)
    if (m.handle && m.handle.address() == dm.source) {
      m.handle = nullptr;
      self->state.config.raft->member_down(name);
      note(log_level::warn, "node " + describe_member(m.info) + " is down");
      tell_node(self, down_atom::value, name);
    }
}

cluster_membership_api::behavior_type membership_behavior(cluster_self self) {
  return {
      [=](hello_atom) {
        auto& nonces = self->state.nonces;
        nonces.push_back(make_nonce());
        if (nonces.size() > max_nonces) nonces.pop_front();
        return nonces.back();
      },
      [=](join_atom, const join_request& req, const caf::actor& peer) {
        return accept_join(self, req, peer);
      },
      [=](stats_atom) -> caf::result<uint32_t> {
        if (!from_trusted(self)) return refuse_untrusted(self, "stats");
        return count_queues(self);
      },
      [=](list_atom, nodes_atom) -> caf::result<std::vector<node_info>> {
        if (!from_trusted(self)) return refuse_untrusted(self, "list nodes");
        return list_nodes(self);
      },
      [=](forget_atom, const std::string& name) -> caf::result<void> {
        if (!from_trusted(self)) return refuse_untrusted(self, "forget");
        return forget(self, name);
      },
      [=](forget_atom, const std::string& from, const std::string& name) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "forget"));
        forgotten_by(self, from, name);
      },
      [=](ready_atom) -> caf::result<void> {
        if (!from_trusted(self)) return refuse_untrusted(self, "ready");
        auto& st = self->state;
        if (st.refused) return st.refused;
        if (st.joined) return caf::unit;
        st.waiting_ready.push_back(self->make_response_promise<void>());
        return st.waiting_ready.back();
      },
      [=](tick_atom) {
        // Only its own timer ticks: each tick from elsewhere would start another timer chain.
        if (self->current_sender() != self->ctrl()) return void(refuse_untrusted(self, "tick"));
        reconnect(self);
      },
  };
}

cluster_metadata_api::behavior_type metadata_behavior(cluster_self self) {
  return {
      [=](placed_atom, queue_placement& p) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "placed"));
        place_local(self, std::move(p));
      },
      [=](removed_atom, const std::string& vhost, const std::string& name) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "removed"));
        remove_local(self, vhost, name);
      },
      [=](placed_atom, const std::string& from, std::vector<queue_placement>& ps, bool complete) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "placed"));
        for (auto& p : ps) p.node = from;
        tell_node(self, placed_atom::value, from, std::move(ps), complete);
      },
      [=](claim_atom, const std::string& vhost,
          const queue_spec& spec) -> caf::result<std::vector<claim_reply>> {
        if (!from_trusted(self)) return refuse_untrusted(self, "claim");
        return claim(self, vhost, spec);
      },
      [=](claim_atom, const std::string& from, const std::string& vhost,
          const queue_spec& spec) -> caf::result<claim_reply> {
        if (!from_trusted(self)) return refuse_untrusted(self, "claim");
        if (!self->state.config.node) return claim_reply{};
        return self->delegate(node_handle(self->state.config.node), claim_atom::value, from, vhost,
                              spec);
      },
      [=](replicate_atom, const std::string& vhost, const topology_change& change) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "replicate"));
        share_change(self, vhost, change);
      },
      [=](replicate_atom, const access_change& change) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "replicate"));
        share_change(self, change);
      },
      [=](replicate_atom, const std::string& from, access_change& change) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "replicate"));
        count_changes(self, 1);
        tell_node(self, replicate_atom::value, from, std::move(change));
      },
      [=](replicate_atom, const std::string& from, const std::string& vhost,
          std::vector<topology_change>& changes) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "replicate"));
        count_changes(self, changes.size());
        tell_node(self, replicate_atom::value, from, vhost, std::move(changes));
      },
      [=](replicate_atom, metadata_view& view) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "metadata view"));
        view_arrived(self, view);
      },
      [=](declare_atom, const std::string& node, const std::string& vhost,
          queue_spec& spec) -> caf::result<queue_info, queue_placement> {
        if (!from_trusted(self)) return refuse_untrusted(self, "declare");
        return declare_on_member(self, node, vhost, spec);
      },
      [=](declare_atom, const std::string& vhost,
          queue_spec& spec) -> caf::result<queue_info, queue_placement> {
        if (!from_trusted(self)) return refuse_untrusted(self, "declare");
        if (!self->state.config.node)
          return make_broker_error(reply_code::internal_error, "the cluster actor has no node");
        return self->delegate(node_handle(self->state.config.node), declare_atom::value, vhost,
                              std::move(spec));
      },
      [=](removed_atom, const std::string& from, const std::string& vhost,
          const std::string& name) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "removed"));
        tell_node(self, removed_atom::value, vhost, name, from);
      },
      [=](raft_atom, uint64_t token, const std::string& to, persistence::raft_frame& frame) {
        raft_frame_out(self, token, to, frame);
      },
      [=](raft_atom, persistence::raft_frame& frame) {
        if (!from_trusted(self)) return void(refuse_untrusted(self, "raft"));
        raft_frame_in(self, frame);
      },
      [=](propose_atom, uint64_t token, std::string& entry) -> caf::result<std::string> {
        if (!from_this_node(self, token)) return refuse_untrusted(self, "propose");
        return propose_here(self, std::move(entry));
      },
      [=](sync_atom, uint64_t token) -> caf::result<std::string> {
        if (!from_this_node(self, token)) return refuse_untrusted(self, "sync");
        return sync_here(self);
      },
      [=](propose_atom, const std::string&,
          std::string& entry) -> caf::result<std::string, uint64_t> {
        if (!from_trusted(self)) return refuse_untrusted(self, "propose");
        return propose_for_member(self, std::move(entry));
      },
      [=](proposed_atom, uint64_t token, uint64_t id, const std::string& error, uint64_t index) {
        proposal_answered(self, token, id, error, index);
      },
      [=](applied_atom, uint64_t token, uint64_t id, const std::string& error) {
        proposal_applied(self, token, id, error);
      },
  };
}

}  // namespace

// A member came up: it gets our whole view, stamped with the version it had when we took it
// (what changes after that is held back and follows it).
void send_view(cluster_self self, const std::string& name) {
  auto& st = self->state;
  if (!st.config.node) return;
  bool under_way = st.held.count(name) != 0;
  st.held[name];
  if (under_way) return;  // the view being put together goes to its new handle
  auto version = st.metadata_version;
  auto first_join = st.first_join;
  self->request(node_handle(st.config.node), caf::infinite, view_atom::value)
      .then(
          [=](metadata_view& view) {
            view.from = self->state.config.self.name;
            view.version = version;
            view.first_join = first_join;
            view_ready(self, name, std::move(view));
          },
          [=](caf::error& err) {
            note(log_level::error, "could not put together our metadata for " + name + ": " +
                                       to_string(describe(err)));
            view_ready(self, name, std::nullopt);
          });
}

}  // namespace warren::cluster_parts

namespace warren {

cluster_actor_type::behavior_type cluster_actor(cluster_self self, cluster_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  if (!st.config.raft) st.config.raft = std::make_shared<raft_relay>();
  st.config.raft->set_cluster(caf::actor_cast<caf::actor>(self));
  st.metadata_version = st.config.metadata_version;
  st.first_join = st.config.first_join;
  for (const auto& m : st.config.stored)
    if (m.name != st.config.self.name) st.members[m.name].info = m;
  for (const auto& address : st.config.join)
    if (address != st.config.self.address) st.join_pending.insert(address);
  // Only a first join waits for --join (it has nothing of the cluster yet). A member restarting
  // knows its members and keeps its own log: it starts whether or not they can be reached (cut
  // off, or down), serves the queues it holds, and meets them, --join's nodes too, when it can.
  st.joined = !st.first_join || st.join_pending.empty();
  self->set_down_handler([=](caf::down_msg& dm) { cluster_parts::on_down(self, dm); });
  if (!st.config.secret.empty()) cluster_parts::reconnect(self);
  return join_parts<cluster_actor_type, cluster_membership_api, cluster_metadata_api>(
      cluster_parts::membership_behavior(self), cluster_parts::metadata_behavior(self));
}

}  // namespace warren
