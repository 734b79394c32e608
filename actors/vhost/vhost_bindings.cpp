// The vhost's exchanges and the bindings between exchanges and queues: declaring, deleting,
// binding and unbinding them, checking both ends of a binding, and the built-in exchanges. The
// routing itself is done by the exchange actors (actors/routing); this file keeps the registry
// they are built from, apart from the queues (vhost_queues.cpp) and the cluster
// (vhost_cluster.cpp).
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/routing/exchange_actor.hpp"
#include "actors/routing/headers_match.hpp"
#include "actors/routing/topic_trie.hpp"
#include "actors/vhost/equivalence.hpp"
#include "actors/vhost/topology_view.hpp"
#include "core/names.hpp"

#include <functional>
#include <optional>

namespace warren::vhost_parts {

using namespace vhost_records;

namespace {

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

}  // namespace

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

std::string binding_key(const binding_spec& b) {
  return binding_identity(b);
}

bool leads_to(const binding_spec& b, const std::string& name, bool exchange) {
  return b.to_exchange == exchange && b.destination == name;
}

void add_exchange(self_ptr self, exchange_spec spec, bool builtin) {
  auto& st = self->state;
  auto actor = caf::actor_cast<caf::actor>(
      self->spawn(exchange_actor, spec, caf::actor_cast<caf::actor>(self)));
  auto name = spec.name;
  st.exchanges[name] = {std::move(spec), std::move(actor), builtin,
                        exchange_id_bit | ++st.next_exchange_id};
}

void drop_binding(self_ptr self, const binding_spec& b, changes& out, bool from_peer) {
  auto& st = self->state;
  if (binding_stored(st, b)) erase_binding(st.vhost, b, out);
  st.bindings.erase(binding_key(b));
  auto e = st.exchanges.find(b.exchange);
  if (e == st.exchanges.end() || !e->second.spec.auto_delete) return;
  if (st.bindings.any_from(b.exchange)) return;
  if (!exchanges_in_log(st) || !e->second.spec.durable)
    return remove_exchange(self, b.exchange, out);
  // Only the member the unbind was made on decides: the others do not see every binding
  // (those to exclusive queues stay on their member), so "none left" may be true only here. A
  // vhost being deleted proposes nothing: the log deletes its exchanges along with it, and an
  // entry of this one committed later could take a new vhost's exchange of the same name.
  if (!from_peer && !st.deleting) auto_delete_through_log(self, b.exchange);
}

void remove_exchange(self_ptr self, const std::string& name, changes& out) {
  auto& st = self->state;
  auto e = st.exchanges.find(name);
  if (e == st.exchanges.end()) return;
  auto id = e->second.id;
  auto gone = st.bindings.from(name);
  auto to_it = st.bindings.leading_to(name, true);
  gone.insert(gone.end(), to_it.begin(), to_it.end());
  for (const auto& b : gone) {
    // One bound to itself is in both lists.
    if (!st.bindings.erase(binding_key(b))) continue;
    if (leads_to(b, name, true))
      if (auto source = st.exchanges.find(b.exchange); source != st.exchanges.end())
        self->send(exchange_handle(source->second.actor), unbind_q_atom::value, id);
    if (binding_stored(st, b)) erase_binding(st.vhost, b, out);
  }
  if (e->second.spec.durable) erase_exchange(st.vhost, name, out);
  self->send_exit(e->second.actor, caf::exit_reason::user_shutdown);
  st.exchanges.erase(e);
}

namespace {

// Starts a durable exchange once its record is stored (see exchange_hold).
caf::result<void> create_durable_exchange(self_ptr self, const exchange_spec& spec,
                                          bool from_peer) {
  auto& st = self->state;
  auto hold = exchange_hold(spec.name);
  st.committing[hold];
  changes batch;
  put_exchange(st.vhost, spec, batch);
  auto rp = self->make_response_promise<void>();
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err) {
      changes unstored;  // the put stays queued for a retry (persistence_actor.hpp): cancel it
      erase_exchange(self->state.vhost, spec.name, unstored);
      persist_quietly(self, std::move(unstored));
      rp.deliver(err);
    } else {
      add_exchange(self, spec, false);
      if (!from_peer) replicate(self, {topology_change::declare_exchange, spec, {}, {}});
      deliver_unit(rp);
    }
    release(self, hold);
  });
  return rp;
}

}  // namespace

caf::result<void> declare_exchange(self_ptr self, exchange_spec& spec, bool passive,
                                   bool from_peer) {
  auto& st = self->state;
  if (auto hold = exchange_hold(spec.name); held(st, hold))
    return from_peer ? park_void_on(self, st.committing[hold], replicate_atom::value, spec)
                     : park_void_on(self, st.committing[hold], declare_atom::value, spec, passive);
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
    if (existing != st.exchanges.end()) return caf::unit;
    if (!exchanges_in_log(st) || from_peer) return no_exchange(st, spec.name);
    auto rp = self->make_response_promise<void>();  // as find_exchange does
    after_log_sync(self, [=]() mutable {
      if (self->state.exchanges.count(spec.name) == 0)
        rp.deliver(no_exchange(self->state, spec.name));
      else
        deliver_unit(rp);
    });
    return rp;
  }
  if (st.deleting) return being_deleted(st, "exchange " + quote(spec.name));
  if (existing == st.exchanges.end()) {
    if (is_reserved_name(spec.name))
      return make_broker_error(reply_code::access_refused, "exchange name " + quote(spec.name) +
                                                               " uses the reserved prefix 'amq.'");
    if (!spec.durable) {
      add_exchange(self, spec, false);
      if (!from_peer) replicate(self, {topology_change::declare_exchange, spec, {}, {}});
      return caf::unit;
    }
    if (exchanges_in_log(st))  // the log brings a member's own, in log order
      return from_peer ? caf::result<void>{caf::unit} : declare_exchange_through_log(self, spec);
    return create_durable_exchange(self, spec, from_peer);
  }
  if (auto m = exchange_mismatch(st.vhost, existing->second.spec, spec); !m.empty())
    return invalid(m);
  return caf::unit;
}

namespace {

// A client's request naming `name`, an exchange this node lacks: declared on a member a moment
// ago, perhaps. Once this node has applied what the log committed before now, `answer_here`
// says whether the request is answered at once (its answer; none for ok) or made again (nullopt,
// as find_exchange does for a publish). The name is held meanwhile, and the request is made
// again before the hold ends: what the client asked after it (an unbind after a bind, a
// delete) waits, and comes after it.
template <class... Ts>
caf::result<void> again_after_sync(
    self_ptr self, const std::string& name,
    std::function<std::optional<caf::error>(const vhost_state&)> answer_here, Ts... request) {
  auto hold = exchange_hold(name);
  self->state.committing[hold];
  auto rp = self->make_response_promise<void>();
  after_log_sync(self, [=]() mutable {
    if (auto answer = answer_here(self->state)) {
      release(self, hold);
      if (*answer)
        rp.deliver(std::move(*answer));
      else
        deliver_unit(rp);
      return;
    }
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite, request...)
        .then([=]() mutable { deliver_unit(rp); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    release(self, hold);
  });
  return rp;
}

// For a bind or unbind: NOT_FOUND while an exchange it names is still not here.
std::optional<caf::error> unless_both_here(const vhost_state& st, const binding_spec& b) {
  auto missing = missing_exchange(st, b);
  if (missing.empty()) return std::nullopt;
  return no_exchange(st, missing);
}

}  // namespace

caf::result<void> delete_exchange(self_ptr self, const std::string& name, bool if_unused,
                                  bool from_peer) {
  auto& st = self->state;
  if (name.empty() || is_reserved_name(name))
    return make_broker_error(
        reply_code::access_refused,
        "exchange " + quote(name) + " belongs to the server and cannot be deleted");
  if (auto hold = exchange_hold(name); held(st, hold))
    return from_peer ? park_void_on(self, st.committing[hold], replicate_atom::value,
                                    delete_atom::value, name)
                     : park_void_on(self, st.committing[hold], delete_atom::value,
                                    exchanges_atom::value, name, if_unused);
  // Deleting what is not there is not an error (as in RabbitMQ): deletes are idempotent. A
  // durable one a member declared may not be applied here yet: the log's entry deletes it if it
  // is there, and its condition makes the delete as idempotent.
  // An if_unused delete first syncs, so that the bindings are checked where it is.
  if (st.exchanges.count(name) == 0 && exchanges_in_log(st) && !from_peer) {
    if (st.deleting) return being_deleted(st, "exchange " + quote(name));
    if (!if_unused) return delete_exchange_through_log(self, name);
    auto gone = [name](const vhost_state& st) -> std::optional<caf::error> {
      if (st.exchanges.count(name) != 0) return std::nullopt;
      return caf::error{};
    };
    return again_after_sync(self, name, gone, delete_atom::value, exchanges_atom::value, name,
                            if_unused);
  }
  if (st.exchanges.count(name) == 0) return caf::unit;
  if (if_unused && st.bindings.any_from(name))
    return invalid("exchange " + quote(name) + in_vhost(st) + " is in use (it has bindings)");
  if (exchanges_in_log(st) && st.exchanges[name].spec.durable) {
    if (from_peer) return caf::unit;
    // An entry of a vhost being deleted, committed after a new vhost of the name, could take
    // that one's exchange.
    if (st.deleting) return being_deleted(st, "exchange " + quote(name));
    return delete_exchange_through_log(self, name, if_unused);
  }
  changes batch;
  remove_exchange(self, name, batch);
  if (!from_peer) replicate(self, {topology_change::delete_exchange, {}, name, {}});
  auto rp = self->make_response_promise<void>();
  reply_after(self, std::move(batch), rp);
  return rp;
}

std::string exchange_hold(const std::string& name) {
  return "exchange " + name;
}

std::string binding_hold(const binding_spec& b) {
  return "binding " + binding_key(b);
}

bool held(const vhost_state& st, const std::string& hold) {
  return st.committing.count(hold) != 0;
}

std::string binding_hold_in_force(const vhost_state& st, const binding_spec& b) {
  for (auto hold : {exchange_hold(b.exchange), b.to_exchange ? exchange_hold(b.destination) : "",
                    binding_hold(b)})
    if (!hold.empty() && held(st, hold)) return hold;
  return {};
}

void release(self_ptr self, const std::string& hold) {
  auto i = self->state.committing.find(hold);
  if (i == self->state.committing.end()) return;
  auto waiting = std::move(i->second);
  self->state.committing.erase(i);
  unpark(std::move(waiting));
}

namespace {

// A binding takes effect once its record is stored (see binding_hold); both ends are checked
// again then, as either may have gone meanwhile.
void bind_after_commit(self_ptr self, binding_spec b, bool stored_record,
                       const caf::actor& requester, bool from_peer,
                       caf::typed_response_promise<void> rp) {
  auto& st = self->state;
  binding_target target;
  auto err = check_binding(self, b, requester, target);
  if (!err && st.bindings.contains(binding_key(b))) return deliver_unit(rp);
  if (err) {
    changes unstored;  // the record outlived an end of the binding: it goes
    if (stored_record) erase_binding(st.vhost, b, unstored);
    persist_quietly(self, std::move(unstored));
    rp.deliver(err);
    return;
  }
  st.bindings.insert(binding_key(b), b);
  if (!from_peer && replicated(st, b)) replicate(self, {topology_change::bind, {}, {}, b});
  self->request(exchange_handle(st.exchanges[b.exchange].actor), caf::infinite, bind_atom::value,
                target.id, target.actor, b.key, b.arguments)
      .then([=](bool) mutable { deliver_unit(rp); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

}  // namespace

std::string missing_exchange(const vhost_state& st, const binding_spec& b) {
  if (!b.exchange.empty() && st.exchanges.count(b.exchange) == 0) return b.exchange;
  if (b.to_exchange && !b.destination.empty() && st.exchanges.count(b.destination) == 0)
    return b.destination;
  return {};
}

caf::result<void> bind(self_ptr self, binding_spec& b, const caf::actor& requester,
                       bool from_peer) {
  auto& st = self->state;
  if (!b.to_exchange && claim_pending(st, b.destination))
    return from_peer ? park_void(self, b.destination, replicate_atom::value, bind_atom::value, b)
                     : park_void(self, b.destination, bind_atom::value, b, requester);
  if (auto hold = binding_hold_in_force(st, b); !hold.empty())
    return from_peer
               ? park_void_on(self, st.committing[hold], replicate_atom::value, bind_atom::value, b)
               : park_void_on(self, st.committing[hold], bind_atom::value, b, requester);
  if (st.deleting) return being_deleted(st, "a binding");
  if (!from_peer && exchanges_in_log(st) && !missing_exchange(st, b).empty())
    return again_after_sync(
        self, missing_exchange(st, b),
        [b](const vhost_state& st) { return unless_both_here(st, b); }, bind_atom::value, b,
        requester);
  binding_target target;
  if (auto err = check_binding(self, b, requester, target)) return err;
  // Proposed even when here: this member may not have applied an unbind committed before now.
  if (binding_in_log(st, b))  // the log brings a member's own, in log order
    return from_peer ? caf::result<void>{caf::unit} : bind_through_log(self, b);
  if (st.bindings.contains(binding_key(b))) return caf::unit;
  bool stored_record = binding_stored(st, b);
  changes batch;
  if (stored_record) put_binding(st.vhost, b, batch);
  auto hold = binding_hold(b);
  st.committing[hold];
  auto rp = self->make_response_promise<void>();
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err) {
      changes unstored;  // the put stays queued for a retry (persistence_actor.hpp): cancel it
      if (stored_record) erase_binding(self->state.vhost, b, unstored);
      persist_quietly(self, std::move(unstored));
      rp.deliver(err);
    } else {
      bind_after_commit(self, b, stored_record, requester, from_peer, rp);
    }
    release(self, hold);
  });
  return rp;
}

caf::result<void> unbind(self_ptr self, binding_spec& b, const caf::actor& requester,
                         bool from_peer) {
  auto& st = self->state;
  if (!b.to_exchange && claim_pending(st, b.destination))
    return from_peer ? park_void(self, b.destination, replicate_atom::value, unbind_atom::value, b)
                     : park_void(self, b.destination, unbind_atom::value, b, requester);
  if (auto hold = binding_hold_in_force(st, b); !hold.empty())
    return from_peer ? park_void_on(self, st.committing[hold], replicate_atom::value,
                                    unbind_atom::value, b)
                     : park_void_on(self, st.committing[hold], unbind_atom::value, b, requester);
  if (!from_peer && exchanges_in_log(st) && !missing_exchange(st, b).empty())
    return again_after_sync(
        self, missing_exchange(st, b),
        [b](const vhost_state& st) { return unless_both_here(st, b); }, unbind_atom::value, b,
        requester);
  binding_target target;
  if (auto err = check_binding(self, b, requester, target)) return err;
  // Proposed even when not here: a member may have bound it a moment ago.
  if (binding_in_log(st, b))
    return from_peer ? caf::result<void>{caf::unit} : unbind_through_log(self, b);
  auto key = binding_key(b);
  if (!st.bindings.contains(key)) return caf::unit;  // unbinding twice is a no-op too
  auto rp = self->make_response_promise<void>();
  auto exchange = st.exchanges[b.exchange].actor;
  if (!from_peer && replicated(st, b)) replicate(self, {topology_change::unbind, {}, {}, b});
  changes batch;
  drop_binding(self, b, batch, from_peer);  // may delete an auto-delete exchange
  self->request(exchange_handle(exchange), caf::infinite, unbind_atom::value, target.id, b.key,
                b.arguments)
      .then([=](bool) mutable { reply_after(self, batch, rp); },
            [=](caf::error&) mutable { reply_after(self, batch, rp); });
  return rp;
}

caf::result<caf::actor, bool> find_exchange(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto e = st.exchanges.find(name);
  if (e != st.exchanges.end()) return {e->second.actor, e->second.spec.internal};
  if (!exchanges_in_log(st)) return no_exchange(st, name);
  // Declared on a member a moment ago, perhaps: once this node applied what the log committed
  // before now, it is here if it is anywhere.
  auto rp = self->make_response_promise<caf::actor, bool>();
  after_log_sync(self, [=]() mutable {
    auto& st = self->state;
    auto e = st.exchanges.find(name);
    if (e == st.exchanges.end())
      rp.deliver(no_exchange(st, name));
    else
      rp.deliver(e->second.actor, e->second.spec.internal);
  });
  return rp;
}

void dead_letter(self_ptr self, const std::string& exchange, std::vector<message_ptr>& msgs) {
  auto& st = self->state;
  auto e = st.exchanges.find(exchange);
  if (e == st.exchanges.end()) return;
  publish_batch batch;
  for (auto& m : msgs) batch.items.push_back({std::move(m), 0});
  caf::anon_send(exchange_handle(e->second.actor), publish_atom::value, std::move(batch));
}

std::vector<exchange_info> list_exchanges(const vhost_state& st) {
  std::vector<exchange_info> out;
  for (const auto& [name, e] : st.exchanges) out.push_back({st.vhost, e.spec});
  return out;
}

std::vector<binding_info> list_bindings(const vhost_state& st) {
  std::vector<binding_info> out;
  for (const auto& [key, b] : st.bindings.all()) out.push_back({st.vhost, b});
  return out;
}

void add_builtin_exchanges(self_ptr self) {
  add_exchange(self, {"", exchange_type::direct, true, false, false, {}}, true);
  add_exchange(self, {"amq.direct", exchange_type::direct, true, false, false, {}}, true);
  add_exchange(self, {"amq.fanout", exchange_type::fanout, true, false, false, {}}, true);
  add_exchange(self, {"amq.topic", exchange_type::topic, true, false, false, {}}, true);
  add_exchange(self, {"amq.headers", exchange_type::headers, true, false, false, {}}, true);
  add_exchange(self, {"amq.match", exchange_type::headers, true, false, false, {}}, true);
}

}  // namespace warren::vhost_parts
