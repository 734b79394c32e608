// Bindings between durable exchanges when the cluster keeps those exchanges in the metadata log
// (issue 33).
//
// As for the exchanges themselves (vhost_log_exchanges.cpp): a bind or an unbind is not made
// here but proposed as one log entry, with conditions that make it mean the same on every member
// (a bind only while the vhost and both exchanges are there, an unbind only while the binding
// is), and what the exchanges route follows the entries the node passes on, in log order. An
// entry deleting an exchange deletes its bindings in the same LMDB transaction, on every member
// alike, and each vhost drops them from its routes as it removes the exchange.
//
// Bindings to queues are not the log's yet: a queue lives on one node, and its record is that
// node's own, so no condition could check it on every member.
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/exchange_protocol.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <set>

namespace warren::vhost_parts {

namespace {

std::string binding_named(const vhost_state& st, const binding_spec& b) {
  return "binding from exchange " + quote(b.exchange) + " to exchange " + quote(b.destination) +
         " with key " + quote(b.key) + in_vhost(st);
}

persistence::meta_condition binding_there(const vhost_state& st, const binding_spec& b) {
  return {persistence::meta_table::bindings, persistence::binding_key(st.vhost, b), true};
}

// The ends of `b` a bind's entry checks: the server's own (amq.*) are in every vhost, in no
// table, and never deleted.
std::vector<std::string> checked_ends(const binding_spec& b) {
  std::vector<std::string> out;
  for (const auto* end : {&b.exchange, &b.destination})
    if (!is_reserved_name(*end)) out.push_back(*end);
  return out;
}

// Why a bind's entry was not applied, as its answer.
caf::error bind_refusal(const vhost_state& st, const binding_spec& b, const std::string& error) {
  auto failed = persistence::metadata_log::failed_condition(error);
  if (!failed) return not_done(binding_named(st, b) + " not made", error);
  auto ends = checked_ends(b);
  if (*failed == 0 || *failed > ends.size())
    return make_broker_error(reply_code::not_found, "vhost " + quote(st.vhost) + " was deleted");
  return no_exchange(st, ends[*failed - 1]);  // deleted on a member meanwhile
}

// The member an unbind was made on decides whether an auto-delete source is left without
// bindings (the others do not see bindings to its exclusive queues).
void after_unbind(self_ptr self, const std::string& source) {
  auto& st = self->state;
  auto e = st.exchanges.find(source);
  if (e == st.exchanges.end() || !e->second.spec.auto_delete || st.bindings.any_from(source) ||
      st.deleting)
    return;
  auto_delete_through_log(self, source);
}

}  // namespace

// Every binding between durable exchanges, amq.* ones included (the log's records are those whose
// key says "to an exchange"): the default exchange takes no binding.
bool binding_in_log(const vhost_state& st, const binding_spec& b) {
  if (!exchanges_in_log(st) || !b.to_exchange || b.exchange.empty() || b.destination.empty())
    return false;
  auto e = st.exchanges.find(b.exchange), d = st.exchanges.find(b.destination);
  return e != st.exchanges.end() && d != st.exchanges.end() && e->second.spec.durable &&
         d->second.spec.durable;
}

caf::result<void> bind_through_log(self_ptr self, const binding_spec& b) {
  auto& st = self->state;
  persistence::metadata_entry entry;
  vhost_records::put_binding(st.vhost, b, entry.changes);
  entry.conditions = {vhost_there(st)};
  for (const auto& end : checked_ends(b)) entry.conditions.push_back(exchange_there(st, end, true));
  // A request naming the binding (an unbind sent right after, no-wait) waits for the answer.
  auto hold = binding_hold(b);
  st.committing[hold];
  auto rp = self->make_response_promise<void>();
  propose_to_log(self, entry, [=](const std::string& error) mutable {
    release(self, hold);
    if (error.empty()) return deliver_unit(rp);
    rp.deliver(bind_refusal(self->state, b, error));
  });
  return rp;
}

caf::result<void> unbind_through_log(self_ptr self, const binding_spec& b) {
  auto& st = self->state;
  persistence::metadata_entry entry;
  vhost_records::erase_binding(st.vhost, b, entry.changes);
  entry.conditions = {binding_there(st, b)};
  auto hold = binding_hold(b);
  st.committing[hold];
  auto rp = self->make_response_promise<void>();
  propose_to_log(self, entry, [=](const std::string& error) mutable {
    release(self, hold);
    if (error.empty()) {
      after_unbind(self, b.exchange);
      return deliver_unit(rp);
    }
    // A failed condition: unbound meanwhile on a member (or never bound), as idempotent as here.
    if (persistence::metadata_log::failed_condition(error)) return deliver_unit(rp);
    rp.deliver(not_done(binding_named(self->state, b) + " not removed", error));
  });
  return rp;
}

void binding_put_by_log(self_ptr self, const binding_spec& b) {
  auto& st = self->state;
  auto key = binding_key(b);
  if (st.bindings.contains(key)) return;
  auto e = st.exchanges.find(b.exchange), d = st.exchanges.find(b.destination);
  if (!b.to_exchange || e == st.exchanges.end() || d == st.exchanges.end()) {
    // The log applied both exchanges before the binding: a bug, not a peer's doing.
    log(log_level::error, "vhost", "the log's " + binding_named(st, b) + " has no exchange here");
    return;
  }
  st.bindings.insert(key, b);
  // Anonymous: the exchange's answer is not wanted here.
  caf::anon_send(exchange_handle(e->second.actor), bind_atom::value, d->second.id, d->second.actor,
                 b.key, b.arguments);
}

void binding_erased_by_log(self_ptr self, const std::string& key) {
  auto& st = self->state;
  auto source = std::string(persistence::parse_binding_key(key).source);
  for (const auto& b : st.bindings.from(source)) {
    if (!b.to_exchange || persistence::binding_key(st.vhost, b) != key) continue;
    auto e = st.exchanges.find(b.exchange), d = st.exchanges.find(b.destination);
    if (e != st.exchanges.end() && d != st.exchanges.end())
      caf::anon_send(exchange_handle(e->second.actor), unbind_atom::value, d->second.id, b.key,
                     b.arguments);
    changes batch;
    drop_binding(self, b, batch, true);  // as from a member: no auto-delete proposed here
    drop_log_owned(st, batch);
    if (!batch.empty()) persist_quietly(self, std::move(batch));
    return;
  }
}

void bindings_replaced_by_log(self_ptr self, const std::vector<binding_spec>& wanted) {
  auto& st = self->state;
  std::set<std::string> keys;
  for (const auto& b : wanted) keys.insert(binding_key(b));
  std::vector<std::string> gone;
  for (const auto& [key, b] : st.bindings.all())
    if (binding_in_log(st, b) && keys.count(key) == 0)
      gone.push_back(persistence::binding_key(st.vhost, b));
  for (const auto& key : gone) binding_erased_by_log(self, key);
  for (const auto& b : wanted) binding_put_by_log(self, b);
}

}  // namespace warren::vhost_parts
