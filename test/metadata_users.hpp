// What the metadata log tests propose and read back: user records, the simplest change the log
// carries, and the names a member's LMDB holds.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_codec.hpp"

#include <set>
#include <string>

namespace warren::test {

/// A put of user `name` (password hash "hash", no tags).
inline persistence::meta_mutation user(const std::string& name) {
  return {persistence::meta_table::users, persistence::user_key(name),
          persistence::encode_user({name, "hash", {}}), false};
}

/// The names of the users `store` holds.
inline std::set<std::string> users_of(persistence::lmdb_store& store) {
  std::set<std::string> out;
  for (const auto& u : store.load().users) out.insert(u.name);
  return out;
}

}  // namespace warren::test
