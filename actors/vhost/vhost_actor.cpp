// The vhost actor (vhost_actor.hpp): its start-up from what the metadata store recovered, its
// behaviour, node shutdown and vhost deletion. The work is done in vhost_bindings.cpp
// (exchanges and bindings), vhost_queues.cpp (queues) and vhost_cluster.cpp (the cluster).
#include "actors/vhost/vhost_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/exchange_protocol.hpp"
#include "actors/common/queue_protocol.hpp"
#include "actors/vhost/vhost_parts.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

namespace warren {

namespace vhost_parts {

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

caf::error being_deleted(const vhost_state& st, const std::string& what) {
  return make_broker_error(reply_code::not_found, "cannot create " + what + ": vhost " +
                                                      quote(st.vhost) + " is being deleted");
}

void persist_quietly(self_ptr self, changes batch) {
  persist(self, std::move(batch), [](const caf::error& err) {
    if (err) log(log_level::error, "vhost", "metadata change lost: " + to_string(describe(err)));
  });
}

}  // namespace vhost_parts

namespace {

using namespace vhost_parts;

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
  drop_log_owned(st, out);  // the entry that deleted the vhost erased them
  return out;
}

// Rebuilds what the metadata store holds for this vhost; nothing is written back.
void restore(self_ptr self, vhost_recovery recovered) {
  auto& st = self->state;
  for (auto& e : recovered.exchanges) add_exchange(self, std::move(e), false);
  for (auto& q : recovered.queue_homes) st.log_queues[q.name] = std::move(q);
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
    st.bindings.insert(binding_key(b), b);
    caf::anon_send(exchange_handle(e->second.actor), bind_atom::value, target.id, target.actor,
                   b.key, b.arguments);
  }
}

// Where a vhost delete waits for a create under way (a cluster claim, or a record being
// committed), or nullptr: that create's record would otherwise be stored after the vhost's
// erases, and outlive it.
std::vector<std::function<void()>>* unsettled_create(vhost_state& st) {
  if (!st.claims.empty()) return &st.claims.begin()->second.parked;
  if (!st.committing.empty()) return &st.committing.begin()->second;
  return nullptr;
}

// Deletes the vhost once no create is under way (see unsettled_create): answers `rp` once its
// records are gone, then stops. Creates are refused from the first call on, so the wait ends.
void shut_down_when_settled(self_ptr self, caf::typed_response_promise<void> rp) {
  auto& st = self->state;
  st.deleting = true;
  if (auto* waiting = unsettled_create(st)) {
    waiting->push_back([=] { shut_down_when_settled(self, rp); });
    return;
  }
  persist(self, delete_everything(self), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
    self->quit();
  });
}

caf::result<void> shut_down(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  shut_down_when_settled(self, rp);
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

void start(self_ptr self, std::string name, storage_context storage, vhost_recovery recovered) {
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
}

}  // namespace

vhost_actor_type::behavior_type vhost_actor(vhost_actor_type::stateful_pointer<vhost_state> self,
                                            std::string name, storage_context storage,
                                            vhost_recovery recovered) {
  start(self, std::move(name), std::move(storage), std::move(recovered));
  using requester_t = const caf::actor&;
  using text = const std::string&;
  return {
      [=](declare_atom, exchange_spec& spec, bool passive) {
        return declare_exchange(self, spec, passive);
      },
      [=](delete_atom, exchanges_atom, text name, bool if_unused) {
        return delete_exchange(self, name, if_unused);
      },
      [=](declare_atom, queue_spec& spec, bool passive, requester_t requester) {
        return declare_queue(self, spec, passive, requester);
      },
      [=](delete_atom, queues_atom, text name, bool if_unused, bool if_empty, bool force,
          requester_t requester) {
        return delete_queue(self, name, if_unused, if_empty, force, requester);
      },
      [=](stream_atom, const stream_command& cmd, requester_t requester) {
        return stream_request(self, cmd, requester);
      },
      [=](purge_atom, text name, requester_t requester) { return purge(self, name, requester); },
      [=](bind_atom, binding_spec& b, requester_t requester) { return bind(self, b, requester); },
      [=](unbind_atom, binding_spec& b, requester_t requester) {
        return unbind(self, b, requester);
      },
      [=](find_atom, exchanges_atom, text name) { return find_exchange(self, name); },
      [=](find_atom, queues_atom, text name, requester_t requester) {
        return find_queue(self, name, requester);
      },
      [=](list_atom, exchanges_atom) { return list_exchanges(self->state); },
      [=](list_atom, bindings_atom) { return list_bindings(self->state); },
      [=](list_atom, queues_atom) { return list_queues(self); },
      [=](list_atom, consumers_atom) { return list_consumers(self); },
      [=](lookup_atom, const message_id& id) { return lookup(self, id); },
      [=](dead_atom, text exchange, std::vector<message_ptr>& msgs) {
        dead_letter(self, exchange, msgs);
      },
      [=](unused_atom, text name, requester_t queue) { queue_unused(self, name, queue); },
      [=](settings_atom, const vhost_limits& limits) { self->state.limits = limits; },
      [=](shutdown_atom) { return shut_down(self); },
      [=](ready_atom) { return when_ready(self); },
      [=](cluster_atom, const caf::actor& cluster, text node_name) {
        set_cluster(self, cluster, node_name);
      },
      [=](placed_atom, const queue_placement& p) { remote_placed(self, p); },
      [=](placed_atom, text node, const std::vector<queue_placement>& ps) {
        remote_placed_all(self, node, ps);
      },
      [=](removed_atom, text queue, text node) { remote_removed(self, queue, node); },
      [=](removed_atom, text node) { remote_node_gone(self, node, false); },
      [=](down_atom, text node) { remote_node_gone(self, node, true); },
      [=](replicate_atom, exchange_spec& spec) {
        return declare_exchange(self, spec, false, true);
      },
      [=](replicate_atom, delete_atom, text name) {
        return delete_exchange(self, name, false, true);
      },
      [=](replicate_atom, bind_atom, binding_spec& b) { return bind_from_peer(self, b); },
      [=](replicate_atom, unbind_atom, binding_spec& b) { return unbind_from_peer(self, b); },
      [=](view_atom) { return topology(self->state); },
      [=](adopt_atom, const vhost_topology& theirs) { adopt_topology(self, theirs); },
      [=](claim_atom, text from, const queue_spec& spec) { return answer_claim(self, from, spec); },
      [=](applied_atom, const caf::actor& node) { follow_log(self, node); },
      [=](applied_atom, const exchange_spec& spec) { exchange_put_by_log(self, spec); },
      [=](applied_atom, delete_atom, text name) {
        if (from_this_node(self)) exchange_erased_by_log(self, name);
      },
      [=](applied_atom, bind_atom, const binding_spec& b) {
        if (from_this_node(self)) binding_put_by_log(self, b);
      },
      [=](applied_atom, unbind_atom, text key) {
        if (from_this_node(self)) binding_erased_by_log(self, key);
      },
      [=](applied_atom, const queue_spec& spec) {
        if (from_this_node(self)) queue_put_by_log(self, spec);
      },
      [=](applied_atom, delete_atom, queues_atom, text name) {
        if (from_this_node(self)) queue_erased_by_log(self, name);
      },
      [=](applied_atom, exchanges_atom, const std::vector<exchange_spec>& exchanges,
          const std::vector<binding_spec>& bindings, const std::vector<queue_spec>& queues) {
        if (!from_this_node(self)) return;
        exchanges_replaced_by_log(self, exchanges);
        bindings_replaced_by_log(self, bindings);
        queues_replaced_by_log(self, queues);
      },
  };
}

}  // namespace warren
