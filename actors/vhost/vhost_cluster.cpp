// The vhost in a cluster: our queues announced, other nodes' queues reached where they live
// (routes to them, a stand-in while their node is down), queue names claimed across the members
// before a queue is created, and exchange and binding changes shared with the members. Apart
// from the registry (vhost_bindings.cpp, vhost_queues.cpp): on a single node none of it acts.
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/exchange_protocol.hpp"
#include "actors/common/node_protocol.hpp"
#include "actors/vhost/equivalence.hpp"
#include "actors/vhost/refusing_queue.hpp"
#include "actors/vhost/topology_view.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <chrono>
#include <set>

namespace warren::vhost_parts {

namespace {

// Points the routes of every binding to remote queue `e` at `target` (its queue actor, or the
// stand-in that refuses publishes while its node is down), or drops them (null target).
void route_remote(self_ptr self, const remote_queues::entry& e, const caf::actor& target) {
  auto& st = self->state;
  auto bindings = st.bindings.leading_to(e.spec.name, false);
  std::set<std::string> exchanges;
  for (const auto& b : bindings) exchanges.insert(b.exchange);
  for (const auto& name : exchanges)
    if (auto x = st.exchanges.find(name); x != st.exchanges.end())
      caf::anon_send(exchange_handle(x->second.actor), unbind_q_atom::value, e.id);
  if (!target) return;
  for (const auto& b : bindings) {
    if (auto x = st.exchanges.find(b.exchange); x != st.exchanges.end())
      caf::anon_send(exchange_handle(x->second.actor), bind_atom::value, e.id, target, b.key,
                     b.arguments);
  }
}

// Publishes routed to a queue whose node is down are refused (nacked) by this stand-in rather
// than dropped or lost in a dead connection: the publisher learns the message is not stored.
caf::actor down_stand_in(self_ptr self) {
  auto& st = self->state;
  if (!st.down_queue)
    st.down_queue = caf::actor_cast<caf::actor>(self->spawn<caf::linked>(refusing_queue));
  return st.down_queue;
}

void drop_remote_bindings(self_ptr self, const std::string& name) {
  auto& st = self->state;
  for (const auto& b : st.bindings.leading_to(name, false)) st.bindings.erase(binding_key(b));
}

}  // namespace

caf::error node_down(const vhost_state& st, const remote_queues::entry& e) {
  return make_broker_error(reply_code::not_found, "queue " + quote(e.spec.name) + in_vhost(st) +
                                                      " lives on node " + e.node +
                                                      ", which is down");
}

void replicate(self_ptr self, topology_change change) {
  auto& st = self->state;
  if (st.cluster)
    self->send(cluster_handle(st.cluster), replicate_atom::value, st.vhost, std::move(change));
}

bool replicated(const vhost_state& st, const binding_spec& b) {
  if (b.exchange.empty() || binding_in_log(st, b)) return false;
  auto q = st.queues.find(b.destination);
  return b.to_exchange || q == st.queues.end() || !q->second.spec.exclusive;
}

void announce(self_ptr self, const vhost_state::queue_entry& q) {
  auto& st = self->state;
  if (!st.cluster || q.spec.exclusive) return;
  self->send(
      cluster_handle(st.cluster), placed_atom::value,
      queue_placement{st.vhost, q.spec, st.node_name, q.actor, caf::actor_cast<caf::actor>(self)});
}

void unannounce(self_ptr self, const vhost_state::queue_entry& q) {
  auto& st = self->state;
  if (st.cluster && !q.spec.exclusive)
    self->send(cluster_handle(st.cluster), removed_atom::value, st.vhost, q.spec.name);
}

void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& node_name) {
  auto& st = self->state;
  st.cluster = cluster;
  st.node_name = node_name;
  for (const auto& [name, q] : st.queues) announce(self, q);
  log_queues_named(self);
}

void remote_placed(self_ptr self, const queue_placement& p) {
  auto& st = self->state;
  if (p.node == st.node_name) return;
  if (st.queues.count(p.spec.name) != 0) {
    log(log_level::warn, "vhost",
        "queue " + quote(p.spec.name) + in_vhost(st) + " lives on this node and on " + p.node +
            " (declared on both at once); this node's copy is the one it uses");
    return;
  }
  auto changed = st.remote.place(p);
  if (!changed) return;
  binding_spec implicit{"", p.spec.name, p.spec.name, {}, false};
  st.bindings.insert(binding_key(implicit), implicit);
  route_remote(self, *changed, changed->queue);
  // Bindings from other members that arrived before this queue did.
  auto [first, last] = st.waiting_bindings.equal_range(p.spec.name);
  for (auto b = first; b != last; ++b)
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite,
                  replicate_atom::value, bind_atom::value, std::move(b->second))
        .then([] {}, [](caf::error&) {});
  st.waiting_bindings.erase(first, last);
}

// Everything `node` has in this vhost, sent as it (re)joins. A transient queue missing from it
// that is marked down (its node was lost) died with an earlier run of that node and is
// forgotten; without this it stayed "down" for ever. One that is up was placed after the list
// was taken (a declare's answer can overtake it) and stays. A durable one missing is kept: it
// comes back once its node has recovered it.
void remote_placed_all(self_ptr self, const std::string& node,
                       const std::vector<queue_placement>& placements) {
  std::set<std::string> present;
  for (const auto& p : placements) {
    present.insert(p.spec.name);
    remote_placed(self, p);
  }
  // Once the log holds durable queues' names, a durable one missing that the log lacks was
  // deleted while this member did not hear of it (the log's erase already dropped it, unless
  // its placement came late).
  const auto& st = self->state;
  std::vector<std::string> gone;
  for (const auto& [name, e] : st.remote.all())
    if (e.node == node && present.count(name) == 0 &&
        ((!e.queue && !e.spec.durable) ||
         (e.spec.durable && exchanges_in_log(st) && st.log_queues.count(name) == 0)))
      gone.push_back(name);
  for (const auto& name : gone) remote_removed(self, name, node);
}

void remote_removed(self_ptr self, const std::string& name, const std::string& node) {
  auto e = self->state.remote.remove(name, node);
  if (!e) return;
  route_remote(self, *e, nullptr);
  drop_remote_bindings(self, name);
}

void remote_node_gone(self_ptr self, const std::string& node, bool down) {
  for (const auto& e : self->state.remote.node_gone(node, down)) {
    route_remote(self, e, down ? down_stand_in(self) : caf::actor{});
    if (!down) drop_remote_bindings(self, e.spec.name);
  }
  if (!down) forget_log_queues_of(self, node);  // forgotten: its queues are gone for good
}

vhost_topology topology(const vhost_state& st) {
  vhost_topology out{st.vhost, {}, {}};
  for (const auto& [name, e] : st.exchanges)
    if (!e.builtin && !(e.spec.durable && exchanges_in_log(st))) out.exchanges.push_back(e.spec);
  for (const auto& [key, b] : st.bindings.all())
    if (replicated(st, b)) out.bindings.push_back(b);
  return out;
}

// Takes a member's exchanges and bindings in place of ours: each change goes through this
// actor's own mailbox, in order, as if a member had sent it.
void adopt_topology(self_ptr self, const vhost_topology& theirs) {
  auto changes = changes_to_adopt(topology(self->state), theirs);
  if (!changes.empty())
    log(log_level::info, "vhost",
        std::to_string(changes.size()) + " exchange and binding change(s) taken from " +
            "the cluster" + in_vhost(self->state));
  auto me = vhost_handle(caf::actor_cast<caf::actor>(self));
  auto failed = [vhost = self->state.vhost](caf::error& err) {
    log(log_level::warn, "vhost",
        "a change taken from the cluster in vhost " + quote(vhost) +
            " was not applied: " + to_string(describe(err)));
  };
  for (auto& c : changes) {
    switch (c.kind) {
      case topology_change::declare_exchange:
        self->request(me, caf::infinite, replicate_atom::value, std::move(c.exchange))
            .then([] {}, failed);
        break;
      case topology_change::delete_exchange:
        self->request(me, caf::infinite, replicate_atom::value, delete_atom::value, c.name)
            .then([] {}, failed);
        break;
      case topology_change::bind:
        self->request(me, caf::infinite, replicate_atom::value, bind_atom::value, c.binding)
            .then([] {}, failed);
        break;
      case topology_change::unbind:
        self->request(me, caf::infinite, replicate_atom::value, unbind_atom::value, c.binding)
            .then([] {}, failed);
        break;
    }
  }
}

void unpark(std::vector<std::function<void()>> parked) {
  for (auto& ask_again : parked) ask_again();
}

bool claim_pending(const vhost_state& st, const std::string& queue) {
  return st.claims.count(queue) != 0;
}

// A queue name is ordered across the cluster before a queue of that name is created: every
// running member is asked; when one already has it (or claims it too and its node name is
// lower), that queue wins and this declare becomes a declare of it there, failing with
// PRECONDITION_FAILED when the declarations differ. Never two queues of one name.
void claim_then_create(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                       const caf::actor& requester, caf::typed_response_promise<queue_info> rp) {
  auto& st = self->state;
  st.claims[spec.name].spec = spec;
  self->request(cluster_handle(st.cluster), caf::infinite, claim_atom::value, st.vhost, spec)
      .then(
          [=](std::vector<claim_reply>& replies) mutable {
            auto& st = self->state;
            auto parked = std::move(st.claims[spec.name].parked);
            st.claims.erase(spec.name);
            const claim_reply* winner = nullptr;
            for (const auto& r : replies)
              if (!r.granted && (winner == nullptr || r.home < winner->home)) winner = &r;
            if (winner == nullptr) {
              create_queue(self, spec, limits, requester, rp);
            } else if (auto m = queue_mismatch(st.vhost, winner->spec, spec); !m.empty()) {
              rp.deliver(invalid(m + " (it lives on node " + winner->home + ")"));
            } else if (!winner->home_vhost) {
              rp.deliver(make_broker_error(
                  reply_code::not_found, "queue " + quote(spec.name) + in_vhost(st) +
                                             " lives on node " + winner->home + ", which is down"));
            } else {
              self->request(vhost_handle(winner->home_vhost), member_timeout, declare_atom::value,
                            spec, false, requester)
                  .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
                        [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
            }
            unpark(std::move(parked));
          },
          [=](caf::error& err) mutable {
            auto parked = std::move(self->state.claims[spec.name].parked);
            self->state.claims.erase(spec.name);
            rp.deliver(std::move(err));
            unpark(std::move(parked));
          });
}

claim_reply answer_claim(self_ptr self, const std::string& from, const queue_spec& spec) {
  auto& st = self->state;
  auto self_handle = caf::actor_cast<caf::actor>(self);
  if (auto q = st.queues.find(spec.name); q != st.queues.end())
    return {false, st.node_name, q->second.spec, self_handle};
  if (const auto* r = st.remote.find(spec.name)) return {false, r->node, r->spec, r->home};
  if (const auto* theirs = log_queue_elsewhere(st, spec.name))  // its home not met yet
    return {false, theirs->home, *theirs, caf::actor{}};
  if (auto c = st.claims.find(spec.name);
      c != st.claims.end() && (c->second.committing || st.node_name < from))
    return {false, st.node_name, c->second.spec, self_handle};
  return {};
}

// A new queue asked for on another node (--node): that node's vhost of this name declares it,
// and its placement is taken here before the answer, so that routes to it exist once we answer.
caf::result<queue_info> declare_elsewhere(self_ptr self, queue_spec spec) {
  auto& st = self->state;
  if (spec.exclusive)
    return invalid("exclusive queue " + quote(spec.name) + in_vhost(st) +
                   " belongs to its connection and lives on that connection's node, not on " +
                   quote(spec.home));
  if (!st.cluster)
    return make_broker_error(reply_code::not_found,
                             "no node " + quote(spec.home) + ": this node is not in a cluster");
  auto home = std::move(spec.home);
  spec.home.clear();
  auto rp = self->make_response_promise<queue_info>();
  self->request(cluster_handle(st.cluster), member_timeout, declare_atom::value, home, st.vhost,
                std::move(spec))
      .then(
          [=](queue_info& info, queue_placement& placed) mutable {
            remote_placed(self, placed);
            rp.deliver(std::move(info));
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<void> bind_from_peer(self_ptr self, binding_spec& b) {
  auto& st = self->state;
  if (!b.to_exchange && st.queues.count(b.destination) == 0 &&
      st.remote.find(b.destination) == nullptr) {
    // Its queue's placement comes from its own node and may arrive after this.
    auto queue = b.destination;
    st.waiting_bindings.emplace(std::move(queue), std::move(b));
    return caf::unit;
  }
  const caf::actor peer_change;  // no connection asks: exclusivity does not apply
  if (missing_exchange(st, b).empty() || !exchanges_in_log(st) ||
      !binding_hold_in_force(st, b).empty())
    return bind(self, b, peer_change, true);  // which waits for a hold in force
  // Its durable exchange came through the log, committed before the member shared the binding:
  // once this node has applied what the log committed, it is here (or deleted since). The
  // binding is held meanwhile, so that the member's later unbind of it waits for this.
  auto hold = binding_hold(b);
  st.committing[hold];
  self->request(node_handle(st.log_node), std::chrono::minutes(2), sync_atom::value,
                metalog_atom::value)
      .then(
          [=]() mutable {
            release(self, hold);  // what waited on it comes after this, by the mailbox
            binding_spec again = b;
            bind(self, again, peer_change, true);
          },
          [=](caf::error& err) {
            release(self, hold);
            log(log_level::warn, "vhost",
                "a binding from a member" + in_vhost(self->state) +
                    " not applied: its exchange is not here and the log did not sync: " +
                    to_string(describe(err)));
          });
  return caf::unit;
}

caf::result<void> unbind_from_peer(self_ptr self, binding_spec& b) {
  const caf::actor peer_change;
  return unbind(self, b, peer_change, true);
}

}  // namespace warren::vhost_parts
