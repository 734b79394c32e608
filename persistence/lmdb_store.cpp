#include "persistence/lmdb_store.hpp"

#include <stdexcept>

namespace warren::persistence {

namespace {

constexpr const char* names[] = {"meta", "vhosts", "exchanges", "queues", "bindings"};
constexpr size_t map_size = size_t{1} << 30;  // address space only; the file grows as needed

void check(int rc, const std::string& what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error("LMDB: " + what + ": " + mdb_strerror(rc));
}

MDB_val val(const std::string& s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view view(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// Aborts a transaction unless committed.
struct txn_guard {
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

}  // namespace

lmdb_store::lmdb_store(const std::string& env_dir) {
  check(mdb_env_create(&env_), "create environment");
  mdb_env_set_maxdbs(env_, 8);
  mdb_env_set_mapsize(env_, map_size);
  int rc = mdb_env_open(env_, env_dir.c_str(), 0, 0644);
  if (rc != MDB_SUCCESS) {
    mdb_env_close(env_);
    env_ = nullptr;
    check(rc, "open " + env_dir);
  }
  txn_guard t;
  check(mdb_txn_begin(env_, nullptr, 0, &t.txn), "begin");
  for (int i = 0; i < 5; ++i) check(mdb_dbi_open(t.txn, names[i], MDB_CREATE, &dbis_[i]), names[i]);
  const std::string version_key = "format-version";
  MDB_val key = val(version_key), data;
  rc = mdb_get(t.txn, dbis_[0], &key, &data);
  if (rc == MDB_NOTFOUND) {
    fresh_ = true;
    auto bytes = encode_format_version(format_version);
    MDB_val value = val(bytes);
    check(mdb_put(t.txn, dbis_[0], &key, &value, 0), "write format version");
  } else {
    check(rc, "read format version");
    auto found = decode_format_version(view(data));
    if (found > format_version)
      throw std::runtime_error("data dir metadata in " + env_dir + " has format version " +
                               std::to_string(found) + "; this warren-node reads up to " +
                               std::to_string(format_version) + " (use a newer build)");
  }
  t.commit("initialize");
}

lmdb_store::~lmdb_store() {
  if (env_ != nullptr) mdb_env_close(env_);
}

void lmdb_store::apply(const std::vector<meta_mutation>& batch) {
  if (batch.empty()) return;
  txn_guard t;
  check(mdb_txn_begin(env_, nullptr, 0, &t.txn), "begin write");
  for (const auto& m : batch) {
    auto dbi = dbis_[1 + static_cast<int>(m.table)];
    MDB_val key = val(m.key);
    if (m.erase) {
      int rc = mdb_del(t.txn, dbi, &key, nullptr);
      if (rc != MDB_NOTFOUND) check(rc, "delete");
    } else {
      MDB_val value = val(m.value);
      check(mdb_put(t.txn, dbi, &key, &value, 0), "put");
    }
  }
  t.commit("commit");
}

metadata_contents lmdb_store::load() {
  metadata_contents out;
  out.fresh = fresh_;
  txn_guard t;
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  for (int table = 1; table < 5; ++table) {
    MDB_cursor* cursor = nullptr;
    check(mdb_cursor_open(t.txn, dbis_[table], &cursor), "cursor");
    MDB_val key, data;
    int rc = mdb_cursor_get(cursor, &key, &data, MDB_FIRST);
    try {
      while (rc == MDB_SUCCESS) {
        auto bytes = view(data);
        switch (table) {
          case 1:
            out.vhosts.push_back(decode_vhost(bytes));
            break;
          case 2:
            out.exchanges.push_back(decode_exchange(bytes));
            break;
          case 3:
            out.queues.push_back(decode_queue(bytes));
            break;
          case 4:
            out.bindings.push_back(decode_binding(bytes));
            break;
        }
        rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT);
      }
    } catch (...) {
      mdb_cursor_close(cursor);
      throw;
    }
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) check(rc, std::string("read ") + names[table]);
  }
  return out;
}

}  // namespace warren::persistence
