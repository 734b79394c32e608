#include "actors/vhost/topology_view.hpp"

#include "actors/vhost/equivalence.hpp"
#include "persistence/metadata_codec.hpp"

#include <map>
#include <set>

namespace warren {

std::string binding_identity(const binding_spec& b) {
  return b.exchange + '\0' + (b.to_exchange ? "e:" : "q:") + b.destination + '\0' + b.key + '\0' +
         persistence::canonical_arguments(b.arguments);
}

namespace {

std::map<std::string, const exchange_spec*> by_name(const std::vector<exchange_spec>& list) {
  std::map<std::string, const exchange_spec*> out;
  for (const auto& e : list) out[e.name] = &e;
  return out;
}

std::set<std::string> identities(const std::vector<binding_spec>& list) {
  std::set<std::string> out;
  for (const auto& b : list) out.insert(binding_identity(b));
  return out;
}

}  // namespace

std::vector<topology_change> changes_to_adopt(const vhost_topology& ours,
                                              const vhost_topology& theirs) {
  auto our_exchanges = by_name(ours.exchanges);
  auto their_exchanges = by_name(theirs.exchanges);
  // Exchanges that go, or come back otherwise: deleting one takes its bindings with it.
  std::set<std::string> replaced;
  for (const auto& [name, spec] : our_exchanges) {
    auto t = their_exchanges.find(name);
    if (t == their_exchanges.end() || !exchange_mismatch(ours.vhost, *spec, *t->second).empty())
      replaced.insert(name);
  }
  auto leads_through_replaced = [&](const binding_spec& b) {
    return replaced.count(b.exchange) != 0 || (b.to_exchange && replaced.count(b.destination));
  };
  std::vector<topology_change> out;
  for (const auto& name : replaced) out.push_back({topology_change::delete_exchange, {}, name, {}});
  for (const auto& e : theirs.exchanges)
    if (our_exchanges.count(e.name) == 0 || replaced.count(e.name) != 0)
      out.push_back({topology_change::declare_exchange, e, {}, {}});
  std::set<std::string> ours_kept;
  for (const auto& b : ours.bindings)
    if (!leads_through_replaced(b)) ours_kept.insert(binding_identity(b));
  for (const auto& b : theirs.bindings)
    if (ours_kept.count(binding_identity(b)) == 0)
      out.push_back({topology_change::bind, {}, {}, b});
  // Unbinding last: an auto-delete exchange keeps the bindings it gains before it loses others.
  auto theirs_bound = identities(theirs.bindings);
  for (const auto& b : ours.bindings)
    if (theirs_bound.count(binding_identity(b)) == 0 && !leads_through_replaced(b))
      out.push_back({topology_change::unbind, {}, {}, b});
  return out;
}

}  // namespace warren
