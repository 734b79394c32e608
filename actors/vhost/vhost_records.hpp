// The metadata records a vhost's declarations become: which survive a restart, and the LMDB
// mutations that store or erase them (handed to the persistence actor). Pure, so the vhost
// actor keeps only its registry.
#pragma once

#include "core/declarations.hpp"
#include "persistence/lmdb_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace warren::vhost_records {

using changes = std::vector<persistence::meta_mutation>;

/// Durable, non-exclusive queues survive a restart (exclusive ones die with their connection).
inline bool stored(const queue_spec& q) {
  return q.durable && !q.exclusive;
}

void put_exchange(const std::string& vhost, const exchange_spec& e, changes& out);
void put_queue(const std::string& vhost, const queue_spec& q, uint64_t id, changes& out);
void put_binding(const std::string& vhost, const binding_spec& b, changes& out);
void erase_exchange(const std::string& vhost, const std::string& name, changes& out);
void erase_queue(const std::string& vhost, const std::string& name, changes& out);
void erase_binding(const std::string& vhost, const binding_spec& b, changes& out);
/// A durable queue's record in the cluster's metadata log (its name, declaration and home
/// node, `q.home`), apart from its node's own record of it (put_queue: its message folder).
void put_queue_home(const std::string& vhost, const queue_spec& q, changes& out);
void erase_queue_home(const std::string& vhost, const std::string& name, changes& out);

}  // namespace warren::vhost_records
