// lmdb_store: the metadata database (LMDB) of a data directory.
//
// Databases: "meta" (format version), "vhosts", "exchanges", "queues", "bindings", with keys
// from metadata_codec.hpp. apply() writes a batch of mutations in one write transaction
// (LMDB fsyncs on commit), so a batch is on disk, whole, or not at all.
//
// Caveats: one writer only (the persistence actor); opening a directory whose format version
// is newer than this build knows throws std::runtime_error saying so, as does a corrupt record
// found by load().
#pragma once

#include "persistence/metadata_codec.hpp"

#include <lmdb.h>

#include <string>
#include <vector>

namespace warren::persistence {

enum class meta_table : uint8_t { vhosts, exchanges, queues, bindings };

/// One change: put `value` under `key`, or (erase) delete `key`.
struct meta_mutation {
  meta_table table = meta_table::vhosts;
  std::string key;
  std::string value;
  bool erase = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_mutation& x) {
  return f(x.table, x.key, x.value, x.erase);
}

struct metadata_contents {
  std::vector<std::string> vhosts;
  std::vector<stored_exchange> exchanges;
  std::vector<stored_queue> queues;
  std::vector<stored_binding> bindings;
  bool fresh = false;  // the directory was new
};

class lmdb_store {
 public:
  static constexpr uint32_t format_version = 1;

  explicit lmdb_store(const std::string& env_dir);
  ~lmdb_store();

  lmdb_store(const lmdb_store&) = delete;
  lmdb_store& operator=(const lmdb_store&) = delete;

  /// Writes the batch in one transaction; throws std::runtime_error if it could not commit.
  void apply(const std::vector<meta_mutation>& batch);

  metadata_contents load();

 private:
  MDB_env* env_ = nullptr;
  MDB_dbi dbis_[5] = {};  // meta, vhosts, exchanges, queues, bindings
  bool fresh_ = false;
};

}  // namespace warren::persistence
