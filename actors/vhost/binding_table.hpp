// binding_table: a vhost's bindings, keyed by identity (binding twice is a no-op), with indexes
// by source exchange and by destination. A queue placed, removed or deleted, or an exchange
// deleted, touches only its own bindings: with one implicit binding per queue, a walk over every
// binding per queue made a member learning 40,000 remote queues take two minutes.
//
// The indexes hold views of the keys of `all_`, whose nodes never move while they exist.
#pragma once

#include "core/declarations.hpp"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warren {

class binding_table {
 public:
  binding_table() = default;
  // The indexes point into this table's own keys: a copy's would point into the original's.
  binding_table(const binding_table&) = delete;
  binding_table& operator=(const binding_table&) = delete;
  binding_table(binding_table&&) = default;  // map nodes, and so the keys, stay where they are
  binding_table& operator=(binding_table&&) = default;

  /// Adds `b` under `key` (its identity); false when a binding of that key is there already.
  bool insert(const std::string& key, const binding_spec& b);
  /// Forgets the binding of `key`; false when there was none.
  bool erase(const std::string& key);
  bool contains(const std::string& key) const { return all_.count(key) != 0; }

  /// Copies, so that the caller may erase while it walks them.
  std::vector<binding_spec> leading_to(const std::string& name, bool to_exchange) const;
  std::vector<binding_spec> from(const std::string& exchange) const;
  bool any_from(const std::string& exchange) const;

  const std::map<std::string, binding_spec, std::less<>>& all() const { return all_; }
  size_t size() const { return all_.size(); }
  void clear();

 private:
  using destination = std::pair<bool, std::string>;  // to_exchange, name
  using keys = std::set<std::string_view>;

  std::vector<binding_spec> specs(const keys& of) const;

  std::map<std::string, binding_spec, std::less<>> all_;
  std::map<std::string, keys, std::less<>> by_exchange_;
  std::map<destination, keys> by_destination_;
};

}  // namespace warren
