// What lmdb_store's two files share (lmdb_store.cpp: opening, formats, writes, loading;
// lmdb_store_log.cpp: the metadata log's side): table names, meta keys, and LMDB helpers.
// Nothing else includes this.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_codec.hpp"

#include <lmdb.h>

#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace warren::persistence::lmdb_detail {

inline constexpr const char* names[] = {"meta",     "vhosts",  "exchanges",   "queues",
                                        "bindings", "users",   "permissions", "members",
                                        "cluster",  "streams", "grants",      "queue_homes"};
inline const std::string version_key = "format-version";
inline const std::string sealed_marker = "values-sealed";
inline const std::string seeded_key = "log-seeded";    // a seed entry was applied: "1"
inline const std::string applied_key = "log-applied";  // the metadata log's last index applied
inline const std::string identity_key =
    "log-identity";  // lmdb_store::log_identity, as "STAGE NODE"
inline constexpr const char* stage_names[] = {"none", "founding", "joining", "open"};

inline void check(int rc, const std::string& what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error("LMDB: " + what + ": " + mdb_strerror(rc));
}

// Decodes one record's value into `out`; throws std::runtime_error when it is malformed.
inline void decode_into(int table, std::string_view key, std::string_view bytes,
                        metadata_contents& out) {
  switch (table) {
    case 1: {
      auto v = decode_vhost(bytes);
      out.vhosts.push_back(v.name);
      if (v.limits.max_connections >= 0 || v.limits.max_queues >= 0) out.limits[v.name] = v.limits;
      break;
    }
    case 2:
      out.exchanges.push_back(decode_exchange(bytes));
      break;
    case 3:
      out.queues.push_back(decode_queue(bytes));
      break;
    case 4:
      out.bindings.push_back(decode_binding(bytes));
      break;
    case 5:
      out.users.push_back(decode_user(bytes));
      break;
    case 6:
      out.permissions.push_back(decode_permission(bytes));
      break;
    case 7:
      out.members.push_back(decode_member(bytes));
      break;
    case 8:
      if (key == cluster_state_key) out.metadata_version = decode_cluster_state(bytes);
      break;
    case 9:
      out.stream_offsets.push_back(decode_stream_offset(bytes));
      break;
    case 10:
      out.grants.push_back(decode_grant(bytes));
      break;
    case 11:
      out.queue_homes.push_back(decode_queue(bytes));
      break;
  }
}

inline MDB_val val(const std::string& s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

inline std::string_view view(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// Aborts a transaction unless committed.
// A transaction and, for its whole life, a shared hold on the store's resize lock: LMDB allows
// mdb_env_set_mapsize only while this process has no transaction open.
struct txn_guard {
  explicit txn_guard(std::shared_mutex& resizing) : resize_hold(resizing) {}
  std::shared_lock<std::shared_mutex> resize_hold;
  MDB_txn* txn = nullptr;
  ~txn_guard() {
    if (txn != nullptr) mdb_txn_abort(txn);
  }
  void commit(const std::string& what) {
    int rc = mdb_txn_commit(txn);
    txn = nullptr;
    check(rc, what);
  }
};

}  // namespace warren::persistence::lmdb_detail
