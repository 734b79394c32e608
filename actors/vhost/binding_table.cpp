#include "actors/vhost/binding_table.hpp"

namespace warren {

namespace {

// Removes `key` from the set filed under `at`, and the set when it is left empty.
template <class Index, class At>
void unfile(Index& index, const At& at, std::string_view key) {
  auto it = index.find(at);
  if (it == index.end()) return;
  it->second.erase(key);
  if (it->second.empty()) index.erase(it);
}

}  // namespace

bool binding_table::insert(const std::string& key, const binding_spec& b) {
  auto [it, added] = all_.try_emplace(key, b);
  if (!added) return false;
  std::string_view stored = it->first;
  by_exchange_[b.exchange].insert(stored);
  by_destination_[{b.to_exchange, b.destination}].insert(stored);
  return true;
}

bool binding_table::erase(const std::string& key) {
  auto it = all_.find(key);
  if (it == all_.end()) return false;
  std::string_view stored = it->first;
  const auto& b = it->second;
  unfile(by_exchange_, b.exchange, stored);
  unfile(by_destination_, destination{b.to_exchange, b.destination}, stored);
  all_.erase(it);
  return true;
}

std::vector<binding_spec> binding_table::specs(const keys& of) const {
  std::vector<binding_spec> out;
  out.reserve(of.size());
  for (auto key : of) out.push_back(all_.find(key)->second);
  return out;
}

std::vector<binding_spec> binding_table::leading_to(const std::string& name,
                                                    bool to_exchange) const {
  auto it = by_destination_.find({to_exchange, name});
  return it == by_destination_.end() ? std::vector<binding_spec>{} : specs(it->second);
}

std::vector<binding_spec> binding_table::from(const std::string& exchange) const {
  auto it = by_exchange_.find(exchange);
  return it == by_exchange_.end() ? std::vector<binding_spec>{} : specs(it->second);
}

bool binding_table::any_from(const std::string& exchange) const {
  return by_exchange_.count(exchange) != 0;
}

void binding_table::clear() {
  by_exchange_.clear();
  by_destination_.clear();
  all_.clear();
}

}  // namespace warren
