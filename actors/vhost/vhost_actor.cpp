#include "actors/vhost/vhost_actor.hpp"

#include "actors/vhost/equivalence.hpp"
#include "actors/vhost/vhost_records.hpp"

#include "actors/common/actor_defaults.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/gather.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/routing/exchange_actor.hpp"
#include "actors/routing/headers_match.hpp"
#include "actors/routing/topic_trie.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/stream/stream_actor.hpp"
#include "actors/vhost/refusing_queue.hpp"
#include "actors/vhost/topology_view.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <set>

namespace warren {

namespace {

using self_ptr = vhost_actor_type::stateful_pointer<vhost_state>;

std::string in_vhost(const vhost_state& st) {
  return " in vhost " + quote(st.vhost);
}

caf::error no_exchange(const vhost_state& st, const std::string& name) {
  return make_broker_error(reply_code::not_found, "no exchange " + quote(name) + in_vhost(st));
}

caf::error no_queue(const vhost_state& st, const std::string& name) {
  return make_broker_error(reply_code::not_found, "no queue " + quote(name) + in_vhost(st));
}

caf::error invalid(const std::string& problem) {
  return make_broker_error(reply_code::precondition_failed, problem);
}

using namespace vhost_records;

// Bindings survive a restart between a durable exchange and a durable exchange or a stored queue.
bool binding_stored(const vhost_state& st, const binding_spec& b) {
  auto e = st.exchanges.find(b.exchange);
  if (b.exchange.empty() || e == st.exchanges.end() || !e->second.spec.durable) return false;
  if (b.to_exchange) {
    auto d = st.exchanges.find(b.destination);
    return d != st.exchanges.end() && d->second.spec.durable;
  }
  auto q = st.queues.find(b.destination);
  return q != st.queues.end() && stored(q->second.spec);
}

template <class Done>
void persist(self_ptr self, changes batch, Done done) {
  warren::persist(self, self->state.storage.persistence, std::move(batch), std::move(done));
}

// For changes nobody waits for (auto-delete, expiry): a failure is logged.
void persist_quietly(self_ptr self, changes batch) {
  persist(self, std::move(batch), [](const caf::error& err) {
    if (err) log(log_level::error, "vhost", "metadata change lost: " + to_string(describe(err)));
  });
}

std::string binding_key(const binding_spec& b) {
  return binding_identity(b);
}

// Whether `b` leads to the queue (or, with to_exchange, the exchange) named `name`.
bool leads_to(const binding_spec& b, const std::string& name, bool exchange) {
  return b.to_exchange == exchange && b.destination == name;
}

// Fails with RESOURCE_LOCKED when `q` is exclusive to another connection.
caf::error check_owner(const vhost_state& st, const vhost_state::queue_entry& q,
                       const caf::actor& requester) {
  if (q.owner && q.owner != requester)
    return make_broker_error(reply_code::resource_locked,
                             "cannot obtain exclusive access to locked queue " +
                                 quote(q.spec.name) + in_vhost(st) +
                                 "; it belongs to another connection");
  return {};
}

std::vector<caf::actor> queue_actors(const vhost_state& st) {
  std::vector<caf::actor> out;
  for (const auto& [name, q] : st.queues) out.push_back(q.actor);
  return out;
}

void add_exchange(self_ptr self, exchange_spec spec, bool builtin) {
  auto& st = self->state;
  auto actor = caf::actor_cast<caf::actor>(
      self->spawn(exchange_actor, spec, caf::actor_cast<caf::actor>(self)));
  auto name = spec.name;
  st.exchanges[name] = {std::move(spec), std::move(actor), builtin,
                        exchange_id_bit | ++st.next_exchange_id};
}

void remove_exchange(self_ptr self, const std::string& name, changes& out);

// Forgets the binding and, for an auto-delete exchange left without bindings, the exchange.
void drop_binding(self_ptr self, const binding_spec& b, changes& out) {
  auto& st = self->state;
  if (binding_stored(st, b)) erase_binding(st.vhost, b, out);
  st.bindings.erase(binding_key(b));
  auto e = st.exchanges.find(b.exchange);
  if (e == st.exchanges.end() || !e->second.spec.auto_delete) return;
  for (const auto& [key, other] : st.bindings)
    if (other.exchange == b.exchange) return;
  remove_exchange(self, b.exchange, out);
}

void remove_exchange(self_ptr self, const std::string& name, changes& out) {
  auto& st = self->state;
  auto e = st.exchanges.find(name);
  if (e == st.exchanges.end()) return;
  auto id = e->second.id;
  for (auto i = st.bindings.begin(); i != st.bindings.end();) {
    const auto& b = i->second;
    bool to_it = leads_to(b, name, true);
    if (b.exchange != name && !to_it) {
      ++i;
      continue;
    }
    if (to_it)
      if (auto source = st.exchanges.find(b.exchange); source != st.exchanges.end())
        self->send(exchange_handle(source->second.actor), unbind_q_atom::value, id);
    if (binding_stored(st, b)) erase_binding(st.vhost, b, out);
    i = st.bindings.erase(i);
  }
  if (e->second.spec.durable) erase_exchange(st.vhost, name, out);
  self->send_exit(e->second.actor, caf::exit_reason::user_shutdown);
  st.exchanges.erase(e);
}

// --- the cluster: our queues announced, other nodes' queues reached where they live ------------

// Sends a change made here to the other members (not one applied from them).
void replicate(self_ptr self, topology_change change) {
  auto& st = self->state;
  if (st.cluster)
    self->send(cluster_handle(st.cluster), replicate_atom::value, st.vhost, std::move(change));
}

// Bindings to exclusive queues stay with them; the default exchange's are implicit.
bool replicated(const vhost_state& st, const binding_spec& b) {
  if (b.exchange.empty()) return false;
  auto q = st.queues.find(b.destination);
  return b.to_exchange || q == st.queues.end() || !q->second.spec.exclusive;
}

constexpr auto remote_timeout = std::chrono::seconds(10);

// Tells the cluster where a queue of ours lives (exclusive queues stay with their connection).
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

// Points the routes of every binding to remote queue `e` at `target` (its queue actor, or the
// stand-in that refuses publishes while its node is down), or drops them (null target).
void route_remote(self_ptr self, const remote_queues::entry& e, const caf::actor& target) {
  auto& st = self->state;
  std::set<std::string> exchanges;
  for (const auto& [key, b] : st.bindings)
    if (leads_to(b, e.spec.name, false)) exchanges.insert(b.exchange);
  for (const auto& name : exchanges)
    if (auto x = st.exchanges.find(name); x != st.exchanges.end())
      caf::anon_send(exchange_handle(x->second.actor), unbind_q_atom::value, e.id);
  if (!target) return;
  for (const auto& [key, b] : st.bindings) {
    if (!leads_to(b, e.spec.name, false)) continue;
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
  for (auto b = st.bindings.begin(); b != st.bindings.end();)
    b = leads_to(b->second, name, false) ? st.bindings.erase(b) : std::next(b);
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
  st.bindings[binding_key(implicit)] = implicit;
  route_remote(self, *changed, changed->queue);
  // Bindings from other members that arrived before this queue did.
  for (auto b = st.waiting_bindings.begin(); b != st.waiting_bindings.end();) {
    if (b->destination != p.spec.name) {
      ++b;
      continue;
    }
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite,
                  replicate_atom::value, bind_atom::value, std::move(*b))
        .then([] {}, [](caf::error&) {});
    b = st.waiting_bindings.erase(b);
  }
}

void remote_removed(self_ptr self, const std::string& name, const std::string& node);

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
  std::vector<std::string> gone;
  for (const auto& [name, e] : self->state.remote.all())
    if (e.node == node && !e.queue && !e.spec.durable && present.count(name) == 0)
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
}

caf::error node_down(const vhost_state& st, const remote_queues::entry& e) {
  return make_broker_error(reply_code::not_found, "queue " + quote(e.spec.name) + in_vhost(st) +
                                                      " lives on node " + e.node +
                                                      ", which is down");
}

// Our exchanges and bindings as the members share them (a member's metadata_view carries them).
vhost_topology topology(const vhost_state& st) {
  vhost_topology out{st.vhost, {}, {}};
  for (const auto& [name, e] : st.exchanges)
    if (!e.builtin) out.exchanges.push_back(e.spec);
  for (const auto& [key, b] : st.bindings)
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

void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& node_name) {
  auto& st = self->state;
  st.cluster = cluster;
  st.node_name = node_name;
  for (const auto& [name, q] : st.queues) announce(self, q);
}

// Removes a queue that has already stopped (or is stopping) from the registry.
void forget_queue(self_ptr self, const std::string& name, changes& out) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end()) return;
  auto id = q->second.id;
  std::vector<binding_spec> gone;
  for (const auto& [key, b] : st.bindings)
    if (leads_to(b, name, false)) gone.push_back(b);
  for (const auto& b : gone) {
    if (auto e = st.exchanges.find(b.exchange); e != st.exchanges.end())
      self->send(exchange_handle(e->second.actor), unbind_q_atom::value, id);
    drop_binding(self, b, out);
  }
  if (stored(q->second.spec)) erase_queue(st.vhost, name, out);
  unannounce(self, q->second);
  st.queues.erase(q);
}

// Deletes a queue unconditionally (exclusive owner gone, auto-delete, x-expires).
void delete_queue_now(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end()) return;
  caf::anon_send(queue_handle(q->second.actor), delete_atom::value, false, false,
                 true);  // no answer wanted
  changes out;
  forget_queue(self, name, out);
  persist_quietly(self, std::move(out));
}

// Answers a declare-like request once its metadata is committed.
template <class Promise, class Value>
void reply_after(self_ptr self, changes batch, Promise rp, Value value) {
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      rp.deliver(value);
  });
}

void reply_after(self_ptr self, changes batch, caf::typed_response_promise<void> rp) {
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
  });
}

caf::result<void> declare_exchange(self_ptr self, exchange_spec& spec, bool passive,
                                   bool from_peer = false) {
  auto& st = self->state;
  if (spec.name.empty()) {
    if (passive) return caf::unit;
    return make_broker_error(reply_code::access_refused,
                             "operation not permitted on the default exchange");
  }
  if (auto problem = check_name("exchange name", spec.name); !problem.empty())
    return invalid(problem);
  if (const auto* ae = find_field(spec.arguments, "alternate-exchange");
      ae != nullptr && ae->kind != field_value::text)
    return invalid("argument 'alternate-exchange' of exchange " + quote(spec.name) + in_vhost(st) +
                   " must be an exchange name, got " + quote(to_string(*ae)));
  auto existing = st.exchanges.find(spec.name);
  if (passive) {
    if (existing == st.exchanges.end()) return no_exchange(st, spec.name);
    return caf::unit;
  }
  if (existing == st.exchanges.end()) {
    if (is_reserved_name(spec.name))
      return make_broker_error(reply_code::access_refused, "exchange name " + quote(spec.name) +
                                                               " uses the reserved prefix 'amq.'");
    add_exchange(self, spec, false);
    if (!from_peer) replicate(self, {topology_change::declare_exchange, spec, {}, {}});
    if (!spec.durable) return caf::unit;
    changes batch;
    put_exchange(st.vhost, spec, batch);
    auto rp = self->make_response_promise<void>();
    reply_after(self, std::move(batch), rp);
    return rp;
  }
  if (auto m = exchange_mismatch(st.vhost, existing->second.spec, spec); !m.empty())
    return invalid(m);
  return caf::unit;
}

caf::result<void> delete_exchange(self_ptr self, const std::string& name, bool if_unused,
                                  bool from_peer = false) {
  auto& st = self->state;
  if (name.empty() || is_reserved_name(name))
    return make_broker_error(
        reply_code::access_refused,
        "exchange " + quote(name) + " belongs to the server and cannot be deleted");
  // Deleting what is not there is not an error (as in RabbitMQ): deletes are idempotent.
  if (st.exchanges.count(name) == 0) return caf::unit;
  if (if_unused) {
    for (const auto& [key, b] : st.bindings)
      if (b.exchange == name)
        return invalid("exchange " + quote(name) + in_vhost(st) + " is in use (it has bindings)");
  }
  changes batch;
  remove_exchange(self, name, batch);
  if (!from_peer) replicate(self, {topology_change::delete_exchange, {}, name, {}});
  auto rp = self->make_response_promise<void>();
  reply_after(self, std::move(batch), rp);
  return rp;
}

// Starts a queue's actor (recovering its messages, when durable) and binds it to the default
// exchange by its own name, as every queue is.
void start_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits, uint64_t id,
                 std::map<std::string, int64_t> committed = {}) {
  auto& st = self->state;
  vhost_state::queue_entry entry;
  entry.spec = spec;
  entry.id = id;
  entry.stream = limits.stream;
  auto me = caf::actor_cast<caf::actor>(self);
  if (entry.stream)
    entry.actor = caf::actor_cast<caf::actor>(self->spawn(stream_actor, st.vhost, spec, limits, me,
                                                          id, st.storage, std::move(committed)));
  else
    entry.actor = caf::actor_cast<caf::actor>(
        self->spawn(queue_actor, st.vhost, spec, limits, me, id, st.storage));
  self->monitor(entry.actor);
  binding_spec implicit{"", spec.name, spec.name, {}, false};
  st.bindings[binding_key(implicit)] = implicit;
  // anon_send: the exchange answers bind requests, and this one needs no answer.
  caf::anon_send(exchange_handle(st.exchanges[""].actor), bind_atom::value, id, entry.actor,
                 spec.name, field_table{});
  announce(self, entry);
  st.queues[spec.name] = std::move(entry);
}

// A request naming a queue whose claim is pending waits for it: it goes to this vhost again once
// the claim is settled (the queue created here, or found elsewhere), and its answer to the asker.
// So a client (or a definitions import) that binds or consumes right after declaring finds the
// queue, as on a single node.
template <class T, class... Ts>
caf::result<T> park(self_ptr self, const std::string& name, Ts... xs) {
  auto rp = self->make_response_promise<T>();
  self->state.claims[name].parked.push_back([=]() mutable {
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite, xs...)
        .then([=](T& answer) mutable { rp.deliver(std::move(answer)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  });
  return rp;
}

template <class... Ts>
caf::result<void> park_void(self_ptr self, const std::string& name, Ts... xs) {
  auto rp = self->make_response_promise<void>();
  self->state.claims[name].parked.push_back([=]() mutable {
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite, xs...)
        .then([=]() mutable { deliver_unit(rp); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  });
  return rp;
}

bool claim_pending(const vhost_state& st, const std::string& queue) {
  return st.claims.count(queue) != 0;
}

// Starts a new queue of this node and answers `rp` once its record is stored.
void create_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                  const caf::actor& requester, caf::typed_response_promise<queue_info> rp) {
  auto& st = self->state;
  auto id = ++*st.storage.next_queue_id;
  start_queue(self, spec, limits, id);
  if (spec.exclusive) {
    st.queues[spec.name].owner = requester;
    self->monitor(requester);
  }
  changes batch;
  if (stored(spec)) put_queue(st.vhost, spec, id, batch);
  queue_info fresh;
  fresh.vhost = st.vhost;
  fresh.spec = spec;
  reply_after(self, std::move(batch), rp, std::move(fresh));
}

// Requests that waited for a claim on their name go again, now that it is settled.
void unpark(std::vector<std::function<void()>> parked) {
  for (auto& ask_again : parked) ask_again();
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
              self->request(vhost_handle(winner->home_vhost), caf::infinite, declare_atom::value,
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

// Another member is about to create queue `spec.name`: what we know of that name.
claim_reply answer_claim(self_ptr self, const std::string& from, const queue_spec& spec) {
  auto& st = self->state;
  auto self_handle = caf::actor_cast<caf::actor>(self);
  if (auto q = st.queues.find(spec.name); q != st.queues.end())
    return {false, st.node_name, q->second.spec, self_handle};
  if (const auto* r = st.remote.find(spec.name)) return {false, r->node, r->spec, r->home};
  if (auto c = st.claims.find(spec.name); c != st.claims.end() && st.node_name < from)
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
  self->request(cluster_handle(st.cluster), caf::infinite, declare_atom::value, home, st.vhost,
                std::move(spec))
      .then(
          [=](queue_info& info, queue_placement& placed) mutable {
            remote_placed(self, placed);
            rp.deliver(std::move(info));
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<queue_info> declare_queue(self_ptr self, queue_spec& spec, bool passive,
                                      const caf::actor& requester) {
  auto& st = self->state;
  if (st.claims.count(spec.name) != 0)
    return park<queue_info>(self, spec.name, declare_atom::value, spec, passive, requester);
  if (st.queues.count(spec.name) == 0) {
    if (const auto* r = st.remote.find(spec.name)) {  // its home node decides
      if (!r->home) return node_down(st, *r);
      return self->delegate(vhost_handle(r->home), declare_atom::value, spec, passive, requester);
    }
    if (!passive && !spec.home.empty() && spec.home != st.node_name)
      return declare_elsewhere(self, std::move(spec));
  }
  if (passive) {
    auto q = st.queues.find(spec.name);
    if (q == st.queues.end()) return no_queue(st, spec.name);
    if (auto err = check_owner(st, q->second, requester)) return err;
    auto rp = self->make_response_promise<queue_info>();
    self->request(queue_handle(q->second.actor), caf::infinite, stats_atom::value)
        .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }
  if (spec.name.empty()) {
    do {
      spec.name = generated_name("amq.gen-");
    } while (st.queues.count(spec.name) != 0);
  } else {
    if (auto problem = check_name("queue name", spec.name); !problem.empty())
      return invalid(problem);
    if (is_reserved_name(spec.name) && st.queues.count(spec.name) == 0)
      return make_broker_error(reply_code::access_refused, "queue name " + quote(spec.name) +
                                                               " uses the reserved prefix 'amq.'");
  }
  queue_limits limits;
  if (auto problem = parse_queue_arguments(spec.arguments, limits); !problem.empty())
    return invalid(problem + " (queue " + quote(spec.name) + in_vhost(st) + ")");
  if (limits.dead_letter_routing_key && !limits.dead_letter_exchange)
    return invalid("x-dead-letter-routing-key needs x-dead-letter-exchange (queue " +
                   quote(spec.name) + in_vhost(st) + ")");
  if (auto problem =
          check_queue_kind(limits, spec.arguments, spec.durable, spec.exclusive, spec.auto_delete);
      !problem.empty())
    return invalid(problem + " (queue " + quote(spec.name) + in_vhost(st) + ")");
  auto existing = st.queues.find(spec.name);
  if (existing != st.queues.end()) {
    auto& q = existing->second;
    if (auto err = check_owner(st, q, requester)) return err;
    if (auto m = queue_mismatch(st.vhost, q.spec, spec); !m.empty()) return invalid(m);
    auto rp = self->make_response_promise<queue_info>();
    self->request(queue_handle(q.actor), caf::infinite, declare_atom::value)
        .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }
  if (st.limits.max_queues >= 0 && st.queues.size() >= static_cast<size_t>(st.limits.max_queues))
    return invalid("cannot declare queue " + quote(spec.name) + ": queue limit in vhost " +
                   quote(st.vhost) + " (" + std::to_string(st.limits.max_queues) + ") is reached");
  auto rp = self->make_response_promise<queue_info>();
  if (st.cluster && !spec.exclusive)
    claim_then_create(self, spec, limits, requester, rp);
  else
    create_queue(self, spec, limits, requester, rp);
  return rp;
}

caf::result<uint32_t> delete_queue(self_ptr self, const std::string& name, bool if_unused,
                                   bool if_empty, bool force, const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<uint32_t>(self, name, delete_atom::value, queues_atom::value, name, if_unused,
                          if_empty, force, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) return uint32_t{0};  // idempotent, as in RabbitMQ
    if (!r->home) return node_down(st, *r);
    return self->delegate(vhost_handle(r->home), delete_atom::value, queues_atom::value, name,
                          if_unused, if_empty, force, requester);
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  auto rp = self->make_response_promise<uint32_t>();
  auto actor = q->second.actor;
  self->request(queue_handle(actor), caf::infinite, delete_atom::value, if_unused, if_empty, force)
      .then(
          [=](uint32_t dropped) mutable {
            auto i = self->state.queues.find(name);
            changes batch;
            if (i != self->state.queues.end() && i->second.actor == actor)
              forget_queue(self, name, batch);
            reply_after(self, std::move(batch), rp, dropped);
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// The destination of a binding: its target id and actor in the source exchange's table.
struct binding_target {
  uint64_t id = 0;
  caf::actor actor;
};

// Checks both ends of a binding; on success `target` is its destination.
caf::error check_binding(self_ptr self, binding_spec& b, const caf::actor& requester,
                         binding_target& target) {
  auto& st = self->state;
  if (b.exchange.empty() || (b.to_exchange && b.destination.empty()))
    return make_broker_error(reply_code::access_refused,
                             "operation not permitted on the default exchange");
  if (auto problem = check_key("binding key", b.key); !problem.empty()) return invalid(problem);
  auto e = st.exchanges.find(b.exchange);
  if (e == st.exchanges.end()) return no_exchange(st, b.exchange);
  if (b.to_exchange) {
    auto d = st.exchanges.find(b.destination);
    if (d == st.exchanges.end()) return no_exchange(st, b.destination);
    target = {d->second.id, d->second.actor};
  } else {
    auto q = st.queues.find(b.destination);
    if (q != st.queues.end()) {
      if (auto err = check_owner(st, q->second, requester)) return err;
      target = {q->second.id, q->second.actor};
    } else if (const auto* r = st.remote.find(b.destination); r != nullptr) {
      if (!r->queue) return node_down(st, *r);
      target = {r->id, r->queue};
    } else {
      return no_queue(st, b.destination);
    }
  }
  if (e->second.spec.type == exchange_type::topic) {
    if (auto problem = check_topic_binding_key(b.key); !problem.empty()) return invalid(problem);
  }
  if (e->second.spec.type == exchange_type::headers) {
    if (auto problem = check_headers_binding(b.arguments); !problem.empty())
      return invalid(problem);
  }
  return {};
}

caf::result<void> bind(self_ptr self, binding_spec& b, const caf::actor& requester,
                       bool from_peer = false) {
  auto& st = self->state;
  if (!b.to_exchange && claim_pending(st, b.destination))
    return from_peer ? park_void(self, b.destination, replicate_atom::value, bind_atom::value, b)
                     : park_void(self, b.destination, bind_atom::value, b, requester);
  binding_target target;
  if (auto err = check_binding(self, b, requester, target)) return err;
  auto key = binding_key(b);
  if (st.bindings.count(key) != 0) return caf::unit;
  st.bindings[key] = b;
  changes batch;
  if (binding_stored(st, b)) put_binding(st.vhost, b, batch);
  auto rp = self->make_response_promise<void>();
  if (!from_peer && replicated(st, b)) replicate(self, {topology_change::bind, {}, {}, b});
  self->request(exchange_handle(st.exchanges[b.exchange].actor), caf::infinite, bind_atom::value,
                target.id, target.actor, b.key, b.arguments)
      .then([=](bool) mutable { reply_after(self, batch, rp); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<void> unbind(self_ptr self, binding_spec& b, const caf::actor& requester,
                         bool from_peer = false) {
  auto& st = self->state;
  if (!b.to_exchange && claim_pending(st, b.destination))
    return from_peer ? park_void(self, b.destination, replicate_atom::value, unbind_atom::value, b)
                     : park_void(self, b.destination, unbind_atom::value, b, requester);
  binding_target target;
  if (auto err = check_binding(self, b, requester, target)) return err;
  auto key = binding_key(b);
  if (st.bindings.count(key) == 0) return caf::unit;  // unbinding twice is a no-op too
  auto rp = self->make_response_promise<void>();
  auto exchange = st.exchanges[b.exchange].actor;
  if (!from_peer && replicated(st, b)) replicate(self, {topology_change::unbind, {}, {}, b});
  changes batch;
  drop_binding(self, b, batch);  // may delete an auto-delete exchange
  self->request(exchange_handle(exchange), caf::infinite, unbind_atom::value, target.id, b.key,
                b.arguments)
      .then([=](bool) mutable { reply_after(self, batch, rp); },
            [=](caf::error&) mutable { reply_after(self, batch, rp); });
  return rp;
}

// Node shutdown: the actors stop, the data stays.
void stop_everything(self_ptr self) {
  auto& st = self->state;
  for (auto& [name, e] : st.exchanges) self->send_exit(e.actor, caf::exit_reason::user_shutdown);
  for (auto& [name, q] : st.queues) {
    self->demonitor(q.actor);
    self->send_exit(q.actor, caf::exit_reason::user_shutdown);
  }
  st.exchanges.clear();
  st.queues.clear();
  st.bindings.clear();
}

// The vhost is deleted: queues delete their messages, every record of the vhost goes.
changes delete_everything(self_ptr self) {
  auto& st = self->state;
  changes out;
  std::vector<std::string> queues;
  for (auto& [name, q] : st.queues) queues.push_back(name);
  for (auto& name : queues) {
    auto& q = st.queues[name];
    self->demonitor(q.actor);
    caf::anon_send(queue_handle(q.actor), delete_atom::value, false, false, true);
    forget_queue(self, name, out);
  }
  std::vector<std::string> exchanges;
  for (auto& [name, e] : st.exchanges) exchanges.push_back(name);
  for (auto& name : exchanges) remove_exchange(self, name, out);
  st.bindings.clear();
  return out;
}

// Rebuilds what the metadata store holds for this vhost; nothing is written back.
void restore(self_ptr self, vhost_recovery recovered) {
  auto& st = self->state;
  for (auto& e : recovered.exchanges) add_exchange(self, std::move(e), false);
  for (auto& [spec, id] : recovered.queues) {
    queue_limits limits;
    if (auto problem = parse_queue_arguments(spec.arguments, limits); !problem.empty()) {
      log(log_level::warn, "vhost",
          "queue " + quote(spec.name) + in_vhost(st) + " has arguments this node refuses (" +
              problem + "); recovered with defaults");
      // A stream's files must never be served (and acked away) as a classic queue's.
      auto type = find_field(spec.arguments, "x-queue-type");
      limits = queue_limits{};
      limits.stream = type != nullptr && type->kind == field_value::text && type->s == "stream";
    }
    start_queue(self, spec, limits, id, std::move(recovered.stream_offsets[id]));
  }
  for (auto& b : recovered.bindings) {
    auto e = st.exchanges.find(b.exchange);
    binding_target target;
    if (auto d = st.exchanges.find(b.destination); b.to_exchange && d != st.exchanges.end())
      target = {d->second.id, d->second.actor};
    if (auto q = st.queues.find(b.destination); !b.to_exchange && q != st.queues.end())
      target = {q->second.id, q->second.actor};
    if (e == st.exchanges.end() || !target.actor) {
      log(log_level::warn, "vhost",
          "dropping a stored binding of " + quote(b.exchange) + " to " +
              (b.to_exchange ? "exchange " : "queue ") + quote(b.destination) + in_vhost(st) +
              ": one end is missing");
      continue;
    }
    st.bindings[binding_key(b)] = b;
    caf::anon_send(exchange_handle(e->second.actor), bind_atom::value, target.id, target.actor,
                   b.key, b.arguments);
  }
}

caf::result<uint32_t> purge(self_ptr self, const std::string& name, const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<uint32_t>(self, name, purge_atom::value, name, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) return no_queue(st, name);
    if (!r->home) return node_down(st, *r);
    return self->delegate(vhost_handle(r->home), purge_atom::value, name, requester);
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  auto rp = self->make_response_promise<uint32_t>();
  self->request(queue_handle(q->second.actor), caf::infinite, purge_atom::value)
      .then([=](uint32_t n) mutable { rp.deliver(n); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// Commits, group listings and reads by offset go to the stream, wherever it lives.
caf::result<stream_reply> stream_request(self_ptr self, const stream_command& cmd,
                                         const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, cmd.queue))
    return park<stream_reply>(self, cmd.queue, stream_atom::value, cmd, requester);
  auto q = st.queues.find(cmd.queue);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(cmd.queue);
    if (r == nullptr) return no_queue(st, cmd.queue);
    if (!r->home) return node_down(st, *r);
    return self->delegate(vhost_handle(r->home), stream_atom::value, cmd, requester);
  }
  if (!q->second.stream)
    return invalid("queue " + quote(cmd.queue) + in_vhost(st) +
                   " is not a stream (declare it with x-queue-type=stream)");
  return self->delegate(caf::actor_cast<stream_actor_type>(q->second.actor), stream_atom::value,
                        cmd);
}

caf::result<caf::actor, bool> find_exchange(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto e = st.exchanges.find(name);
  if (e == st.exchanges.end()) return no_exchange(st, name);
  return {e->second.actor, e->second.spec.internal};
}

caf::result<caf::actor> find_queue(self_ptr self, const std::string& name,
                                   const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<caf::actor>(self, name, find_atom::value, queues_atom::value, name, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) return no_queue(st, name);
    if (!r->queue) return node_down(st, *r);
    return r->queue;
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  return q->second.actor;
}

// Dead letters from a queue go through their exchange; a missing one drops them, as RabbitMQ.
void dead_letter(self_ptr self, const std::string& exchange, std::vector<message_ptr>& msgs) {
  auto& st = self->state;
  auto e = st.exchanges.find(exchange);
  if (e == st.exchanges.end()) return;
  publish_batch batch;
  for (auto& m : msgs) batch.items.push_back({std::move(m), 0});
  caf::anon_send(exchange_handle(e->second.actor), publish_atom::value, std::move(batch));
}

// A queue that should go (auto-delete, x-expires), unless it was replaced meanwhile.
void queue_unused(self_ptr self, const std::string& name, const caf::actor& queue) {
  auto q = self->state.queues.find(name);
  if (q != self->state.queues.end() && q->second.actor == queue) delete_queue_now(self, name);
}

std::vector<exchange_info> list_exchanges(const vhost_state& st) {
  std::vector<exchange_info> out;
  for (const auto& [name, e] : st.exchanges) out.push_back({st.vhost, e.spec});
  return out;
}

std::vector<binding_info> list_bindings(const vhost_state& st) {
  std::vector<binding_info> out;
  for (const auto& [key, b] : st.bindings) out.push_back({st.vhost, b});
  return out;
}

// Asks every queue for its statistics; `done` gets them in queue name order.
template <class Done>
void gather_stats(self_ptr self, Done done) {
  gather<queue_info>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, stats_atom::value);
      },
      [=](std::vector<queue_info> rows) mutable {
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.spec.name < b.spec.name; });
        done(std::move(rows));
      });
}

// This node's queues, then those of other members: asked where they live, or a row saying their
// node is down.
caf::typed_response_promise<std::vector<queue_info>> list_queues(self_ptr self) {
  auto rp = self->make_response_promise<std::vector<queue_info>>();
  gather_stats(self, [=](std::vector<queue_info> rows) mutable {
    auto& st = self->state;
    for (auto& row : rows) row.node = st.node_name;
    std::vector<caf::actor> remote;
    for (const auto& [name, e] : st.remote.all()) {
      if (e.queue) {
        remote.push_back(e.queue);
        continue;
      }
      queue_info down;
      down.vhost = st.vhost;
      down.spec = e.spec;
      down.node = e.node;
      down.unavailable = "its node " + e.node + " is down";
      rows.push_back(std::move(down));
    }
    gather<queue_info>(
        remote,
        [=](const caf::actor& q) {
          return self->request(queue_handle(q), remote_timeout, stats_atom::value);
        },
        [=](std::vector<queue_info> theirs) mutable {
          for (auto& row : theirs) {
            const auto* e = self->state.remote.find(row.spec.name);
            row.node = e != nullptr ? e->node : std::string();
            rows.push_back(std::move(row));
          }
          std::sort(rows.begin(), rows.end(),
                    [](const auto& a, const auto& b) { return a.spec.name < b.spec.name; });
          rp.deliver(std::move(rows));
        });
  });
  return rp;
}

caf::typed_response_promise<std::vector<consumer_info>> list_consumers(self_ptr self) {
  auto rp = self->make_response_promise<std::vector<consumer_info>>();
  gather<std::vector<consumer_info>>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, consumers_atom::value);
      },
      [=](std::vector<std::vector<consumer_info>> parts) mutable {
        std::vector<consumer_info> rows;
        for (auto& p : parts) rows.insert(rows.end(), p.begin(), p.end());
        rp.deliver(std::move(rows));
      });
  return rp;
}

caf::typed_response_promise<lookup_reply> lookup(self_ptr self, const message_id& id) {
  auto rp = self->make_response_promise<lookup_reply>();
  gather<lookup_reply>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, lookup_atom::value, id);
      },
      [=](std::vector<lookup_reply> replies) mutable {
        lookup_reply answer;
        for (auto& r : replies)
          if (r.found) answer = std::move(r);
        rp.deliver(std::move(answer));
      });
  return rp;
}

// The vhost is being deleted: answered once its records are gone, then it stops.
caf::typed_response_promise<void> shut_down(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  persist(self, delete_everything(self), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
    self->quit();
  });
  return rp;
}

// Answered once every queue has recovered (queues recover before their first message).
caf::typed_response_promise<void> when_ready(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  gather_stats(self, [=](std::vector<queue_info>) mutable { deliver_unit(rp); });
  return rp;
}

void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  std::vector<std::string> gone;
  for (const auto& [qname, q] : st.queues) {
    // An exclusive queue's connection closed, or a queue actor stopped on its own.
    if ((q.owner && q.owner.address() == dm.source) || q.actor.address() == dm.source)
      gone.push_back(qname);
  }
  for (const auto& qname : gone) delete_queue_now(self, qname);
}

void add_builtin_exchanges(self_ptr self) {
  add_exchange(self, {"", exchange_type::direct, true, false, false, {}}, true);
  add_exchange(self, {"amq.direct", exchange_type::direct, true, false, false, {}}, true);
  add_exchange(self, {"amq.fanout", exchange_type::fanout, true, false, false, {}}, true);
  add_exchange(self, {"amq.topic", exchange_type::topic, true, false, false, {}}, true);
  add_exchange(self, {"amq.headers", exchange_type::headers, true, false, false, {}}, true);
  add_exchange(self, {"amq.match", exchange_type::headers, true, false, false, {}}, true);
}

}  // namespace

vhost_actor_type::behavior_type vhost_actor(vhost_actor_type::stateful_pointer<vhost_state> self,
                                            std::string name, storage_context storage,
                                            vhost_recovery recovered) {
  install_actor_defaults(self, "vhost");
  self->state.vhost = std::move(name);
  self->state.storage = std::move(storage);
  add_builtin_exchanges(self);
  restore(self, std::move(recovered));
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    stop_everything(self);
    self->quit(msg.reason);
  });
  using requester_t = const caf::actor&;
  return {
      [=](declare_atom, exchange_spec& spec, bool passive) {
        return declare_exchange(self, spec, passive);
      },
      [=](delete_atom, exchanges_atom, const std::string& name, bool if_unused) {
        return delete_exchange(self, name, if_unused);
      },
      [=](declare_atom, queue_spec& spec, bool passive, requester_t requester) {
        return declare_queue(self, spec, passive, requester);
      },
      [=](delete_atom, queues_atom, const std::string& name, bool if_unused, bool if_empty,
          bool force, requester_t requester) {
        return delete_queue(self, name, if_unused, if_empty, force, requester);
      },
      [=](stream_atom, const stream_command& cmd, requester_t requester) {
        return stream_request(self, cmd, requester);
      },
      [=](purge_atom, const std::string& name, requester_t requester) {
        return purge(self, name, requester);
      },
      [=](bind_atom, binding_spec& b, requester_t requester) { return bind(self, b, requester); },
      [=](unbind_atom, binding_spec& b, requester_t requester) {
        return unbind(self, b, requester);
      },
      [=](find_atom, exchanges_atom, const std::string& name) { return find_exchange(self, name); },
      [=](find_atom, queues_atom, const std::string& name, requester_t requester) {
        return find_queue(self, name, requester);
      },
      [=](list_atom, exchanges_atom) { return list_exchanges(self->state); },
      [=](list_atom, bindings_atom) { return list_bindings(self->state); },
      [=](list_atom, queues_atom) { return list_queues(self); },
      [=](list_atom, consumers_atom) { return list_consumers(self); },
      [=](lookup_atom, const message_id& id) { return lookup(self, id); },
      [=](dead_atom, const std::string& exchange, std::vector<message_ptr>& msgs) {
        dead_letter(self, exchange, msgs);
      },
      [=](unused_atom, const std::string& name, requester_t queue) {
        queue_unused(self, name, queue);
      },
      [=](settings_atom, const vhost_limits& limits) { self->state.limits = limits; },
      [=](shutdown_atom) { return shut_down(self); },
      [=](ready_atom) { return when_ready(self); },
      [=](cluster_atom, const caf::actor& cluster, const std::string& node_name) {
        set_cluster(self, cluster, node_name);
      },
      [=](placed_atom, const queue_placement& p) { remote_placed(self, p); },
      [=](placed_atom, const std::string& node, const std::vector<queue_placement>& ps) {
        remote_placed_all(self, node, ps);
      },
      [=](removed_atom, const std::string& queue, const std::string& node) {
        remote_removed(self, queue, node);
      },
      [=](removed_atom, const std::string& node) { remote_node_gone(self, node, false); },
      [=](down_atom, const std::string& node) { remote_node_gone(self, node, true); },
      [=](replicate_atom, exchange_spec& spec) {
        return declare_exchange(self, spec, false, true);
      },
      [=](replicate_atom, delete_atom, const std::string& name) {
        return delete_exchange(self, name, false, true);
      },
      [=](replicate_atom, bind_atom, binding_spec& b) -> caf::result<void> {
        auto& st = self->state;
        if (!b.to_exchange && st.queues.count(b.destination) == 0 &&
            st.remote.find(b.destination) == nullptr) {
          // Its queue's placement comes from its own node and may arrive after this.
          st.waiting_bindings.push_back(std::move(b));
          return caf::unit;
        }
        const caf::actor peer_change;  // no connection asks: exclusivity does not apply
        return bind(self, b, peer_change, true);
      },
      [=](replicate_atom, unbind_atom, binding_spec& b) {
        const caf::actor peer_change;
        return unbind(self, b, peer_change, true);
      },
      [=](view_atom) { return topology(self->state); },
      [=](adopt_atom, const vhost_topology& theirs) { adopt_topology(self, theirs); },
      [=](claim_atom, const std::string& from, const queue_spec& spec) {
        return answer_claim(self, from, spec);
      },
  };
}

}  // namespace warren
