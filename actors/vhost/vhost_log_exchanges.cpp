// Durable exchanges when the cluster keeps them in the metadata log (issue 33).
//
// A declare or a delete is not made here: it becomes one log entry, proposed through the node,
// with conditions that make it mean the same on every member (declared only where absent,
// deleted only where present, both only while the vhost is there). What this vhost runs follows
// the entries the node passes on, in log order, on every member alike: an exchange starts or
// stops only there. The node answers a proposal only after it has passed on every entry its log
// applied before the answer, so the exchange has started or stopped here when the answer comes.
//
// Non-durable exchanges stay this node's own, shared with the members the old way: they are in
// no table, and in the log they would outlive a restart of the whole cluster.
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/node_protocol.hpp"
#include "actors/vhost/equivalence.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <algorithm>
#include <chrono>
#include <set>

namespace warren::vhost_parts {

using persistence::meta_table;
using vhost_records::erase_exchange;
using vhost_records::put_exchange;

persistence::meta_condition vhost_there(const vhost_state& st) {
  return {meta_table::vhosts, persistence::vhost_key(st.vhost), true};
}

persistence::meta_condition exchange_there(const vhost_state& st, const std::string& name,
                                           bool present) {
  return {meta_table::exchanges, persistence::exchange_key(st.vhost, name), present};
}

void propose_to_log(self_ptr self, const persistence::metadata_entry& entry,
                    std::function<void(const std::string& error)> done) {
  auto& st = self->state;
  if (!st.log_node) return done("this vhost has no node to propose through");
  self->request(node_handle(st.log_node), std::chrono::minutes(2), propose_atom::value,
                persistence::encode_metadata_entry(entry))
      .then([=](std::string& error) { done(error); },
            [=](caf::error& err) { done(to_string(describe(err))); });
}

caf::error not_done(const std::string& what, const std::string& error) {
  bool unstorable = error.rfind(persistence::metadata_log::unstorable_change, 0) == 0;
  return make_broker_error(
      unstorable ? reply_code::precondition_failed : reply_code::resource_error,
      what + ": " + error);
}

namespace {

// Why a declare's entry was not applied, as its answer; ok (none) when a member declared the
// same exchange first, which is as idempotent as a second declare here.
caf::error declare_refusal(const vhost_state& st, const exchange_spec& spec,
                           const std::string& error) {
  auto failed = persistence::metadata_log::failed_condition(error);
  if (!failed)
    return not_done("exchange " + quote(spec.name) + in_vhost(st) + " not declared", error);
  if (*failed == 0)
    return make_broker_error(reply_code::not_found, "vhost " + quote(st.vhost) + " was deleted");
  // Not applied here yet: what this node holds of the name is older than what made the entry
  // fail, and tells nothing.
  if (error.find(persistence::metadata_log::not_applied_here) != std::string::npos)
    return make_broker_error(reply_code::resource_error,
                             "exchange " + quote(spec.name) + in_vhost(st) +
                                 " was changed on another member first, and this node has not "
                                 "applied that yet; declare it again");
  auto e = st.exchanges.find(spec.name);
  if (e == st.exchanges.end())  // declared on a member, and deleted again since
    return make_broker_error(reply_code::resource_error,
                             "exchange " + quote(spec.name) + in_vhost(st) +
                                 " was declared and deleted meanwhile; declare it again");
  if (auto m = exchange_mismatch(st.vhost, e->second.spec, spec); !m.empty()) return invalid(m);
  return {};
}

}  // namespace

caf::result<void> declare_exchange_through_log(self_ptr self, const exchange_spec& spec) {
  auto& st = self->state;
  persistence::metadata_entry entry;
  put_exchange(st.vhost, spec, entry.changes);
  entry.conditions = {vhost_there(st), exchange_there(st, spec.name, false)};
  // Requests naming the exchange wait for the answer (a bind sent right after the declare).
  auto hold = exchange_hold(spec.name);
  st.committing[hold];
  auto rp = self->make_response_promise<void>();
  propose_to_log(self, entry, [=](const std::string& error) mutable {
    release(self, hold);
    auto refusal = error.empty() ? caf::error{} : declare_refusal(self->state, spec, error);
    if (refusal)
      rp.deliver(std::move(refusal));
    else
      deliver_unit(rp);
  });
  return rp;
}

namespace {

// An entry's condition: no binding of the log's from exchange `name` (one made on a member
// meanwhile would go with the exchange). Bindings to a member's queues are its own, not seen.
persistence::meta_condition unbound_in_log(const vhost_state& st, const std::string& name) {
  persistence::meta_condition c;
  c.table = meta_table::bindings;
  c.key = persistence::binding_prefix(st.vhost, name);
  c.present = false;
  c.prefix = true;
  return c;
}

}  // namespace

caf::result<void> delete_exchange_through_log(self_ptr self, const std::string& name,
                                              bool if_unused) {
  auto& st = self->state;
  persistence::metadata_entry entry;
  erase_exchange(st.vhost, name, entry.changes);
  entry.conditions = {exchange_there(st, name, true)};
  if (if_unused) entry.conditions.push_back(unbound_in_log(st, name));
  auto hold = exchange_hold(name);
  st.committing[hold];
  auto rp = self->make_response_promise<void>();
  propose_to_log(self, entry, [=](const std::string& error) mutable {
    release(self, hold);
    auto failed = persistence::metadata_log::failed_condition(error);
    if (failed && *failed == 1) {
      rp.deliver(invalid("exchange " + quote(name) + in_vhost(self->state) +
                         " is in use (bound on another member meanwhile)"));
      return;
    }
    // The first condition: deleted meanwhile on a member, which is as idempotent as here.
    if (error.empty() || failed) return deliver_unit(rp);
    rp.deliver(not_done("exchange " + quote(name) + in_vhost(self->state) + " not deleted", error));
  });
  return rp;
}

void auto_delete_through_log(self_ptr self, const std::string& name) {
  auto& st = self->state;
  persistence::metadata_entry entry;
  erase_exchange(st.vhost, name, entry.changes);
  // Bound again meanwhile (on any member): no longer left without bindings.
  entry.conditions = {exchange_there(st, name, true), unbound_in_log(st, name)};
  propose_to_log(self, entry, [=](const std::string& error) {
    if (!error.empty() && !persistence::metadata_log::failed_condition(error))
      log(log_level::warn, "vhost",
          "auto-delete exchange " + quote(name) + in_vhost(self->state) +
              " left without bindings, but not deleted: " + error);
  });
}

void exchange_put_by_log(self_ptr self, const exchange_spec& spec) {
  auto& st = self->state;
  if (!from_this_node(self)) return;  // only the node passes on what the log applied
  auto e = st.exchanges.find(spec.name);
  if (e != st.exchanges.end()) {
    if (e->second.builtin || exchange_mismatch(st.vhost, e->second.spec, spec).empty()) return;
    changes batch;  // another declaration of the name won, or this node's own (non-durable)
    remove_exchange(self, spec.name, batch);
    drop_log_owned(st, batch);
    if (!batch.empty()) persist_quietly(self, std::move(batch));
  }
  add_exchange(self, spec, false);
}

void exchange_erased_by_log(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto e = st.exchanges.find(name);
  // A non-durable one of that name is this node's own, not the log's.
  if (e == st.exchanges.end() || e->second.builtin || !e->second.spec.durable) return;
  changes batch;
  remove_exchange(self, name, batch);
  drop_log_owned(st, batch);
  if (!batch.empty()) persist_quietly(self, std::move(batch));
}

void exchanges_replaced_by_log(self_ptr self, const std::vector<exchange_spec>& wanted) {
  auto& st = self->state;
  if (!from_this_node(self)) return;  // only the node passes on what the log applied
  std::set<std::string> names;
  for (const auto& spec : wanted) names.insert(spec.name);
  std::vector<std::string> gone;
  for (const auto& [name, e] : st.exchanges)
    if (!e.builtin && e.spec.durable && names.count(name) == 0) gone.push_back(name);
  for (const auto& name : gone) exchange_erased_by_log(self, name);
  for (const auto& spec : wanted) exchange_put_by_log(self, spec);
}

bool from_this_node(self_ptr self) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

void follow_log(self_ptr self, const caf::actor& node) {
  if (!from_this_node(self)) return;
  self->state.log_node = node;
  if (!self->state.own_queues_offered) propose_missing_own_queues(self);
}

void drop_log_owned(const vhost_state& st, changes& batch) {
  if (!exchanges_in_log(st)) return;
  batch.erase(std::remove_if(batch.begin(), batch.end(),
                             [](const persistence::meta_mutation& m) {
                               return persistence::lmdb_store::in_log(m.table, m.key);
                             }),
              batch.end());
}

void after_log_sync(self_ptr self, std::function<void()> then) {
  self->request(node_handle(self->state.log_node), std::chrono::minutes(2), sync_atom::value,
                metalog_atom::value)
      .then([=] { then(); }, [=](caf::error&) { then(); });
}

bool exchanges_in_log(const vhost_state& st) {
  return static_cast<bool>(st.log_node);
}

}  // namespace warren::vhost_parts
