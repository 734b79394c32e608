#include "persistence/lmdb_store.hpp"

#include "persistence/data_dir.hpp"
#include "persistence/lmdb_detail.hpp"
#include "persistence/record_seal.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace warren::persistence {

using namespace lmdb_detail;

lmdb_store::lmdb_store(const std::string& env_dir, const std::string& refuse_fresh,
                       size_t map_bytes) {
  try {
    open_env(env_dir, 0, map_bytes);
    make_room_to_rewrite();
    txn_guard t{resize_mutex_};
    check(mdb_txn_begin(env_, nullptr, 0, &t.txn), "begin");
    for (int i = 0; i < table_count; ++i) {
      check(mdb_dbi_open(t.txn, names[i], MDB_CREATE, &dbis_[i]), names[i]);
      present_[i] = true;
    }
    check_format_version(t.txn, env_dir, refuse_fresh);
    seal_unsealed_values(t.txn);
    t.commit("initialize");
    // LMDB never syncs its folder: without this, a power cut could take back the new data.mdb.
    if (fresh_) sync_directory(env_dir);
  } catch (...) {
    close_env();
    throw;
  }
}

lmdb_store::lmdb_store(const std::string& env_dir, read_only_t) {
  try {
    open_env(env_dir, MDB_RDONLY | MDB_NOLOCK, default_map_bytes);
    txn_guard t{resize_mutex_};
    check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
    for (int i = 0; i < table_count; ++i) {
      int rc = mdb_dbi_open(t.txn, names[i], 0, &dbis_[i]);
      if (rc != MDB_NOTFOUND) check(rc, names[i]);
      present_[i] = rc == MDB_SUCCESS;
    }
    read_format_version(t.txn);
    MDB_val key = val(sealed_marker), data;
    int rc = present_[0] ? mdb_get(t.txn, dbis_[0], &key, &data) : MDB_NOTFOUND;
    if (rc != MDB_NOTFOUND) check(rc, "read " + sealed_marker);
    values_sealed_ = rc == MDB_SUCCESS;
    t.commit("read");  // keeps the table handles open
  } catch (...) {
    close_env();
    throw;
  }
}

void lmdb_store::open_env(const std::string& env_dir, unsigned flags, size_t map_bytes) {
  static_assert(sizeof(names) / sizeof(names[0]) == table_count);
  check(mdb_env_create(&env_), "create environment");
  mdb_env_set_maxdbs(env_, table_count);
  mdb_env_set_mapsize(env_, map_bytes);
  check(mdb_env_open(env_, env_dir.c_str(), flags, 0644), "open " + env_dir);
  check_not_truncated(env_dir);
}

// LMDB wants an environment that failed to open closed all the same.
void lmdb_store::close_env() {
  if (env_ != nullptr) mdb_env_close(env_);
  env_ = nullptr;
}

std::vector<std::string> lmdb_store::tables() const {
  std::vector<std::string> out;
  for (int i = 0; i < table_count; ++i)
    if (present_[i]) out.emplace_back(names[i]);
  return out;
}

// LMDB maps the file and trusts its meta page: pages past a truncated end would be read
// through the map and kill the process with SIGBUS. The meta page is read with pread, so the
// last page it names can be checked against the file's size before any other page is touched.
void lmdb_store::check_not_truncated(const std::string& env_dir) {
  MDB_envinfo info{};
  MDB_stat stat{};
  check(mdb_env_info(env_, &info), "read environment info");
  check(mdb_env_stat(env_, &stat), "read environment stat");
  auto file = env_dir + "/data.mdb";
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return;
  auto needed = (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
  if (static_cast<uint64_t>(st.st_size) < needed)
    throw std::runtime_error(file + " is truncated: it has " + std::to_string(st.st_size) +
                             " bytes, but its last page ends at byte " + std::to_string(needed) +
                             "; restore it from a backup (the queue folders are untouched)");
}

bool lmdb_store::holds_no_records(MDB_txn* txn) {
  for (int table = 1; table < table_count; ++table) {
    if (!present_[table]) continue;
    MDB_stat stat{};
    check(mdb_stat(txn, dbis_[table], &stat), std::string("count ") + names[table]);
    if (stat.ms_entries != 0) return false;
  }
  return true;
}

// The format version the directory holds. A first start stores it here, and vhost '/' and its
// user later (through the persistence actor): without it, or cut short in between (no record
// at all), the directory counts as fresh.
void lmdb_store::read_format_version(MDB_txn* txn) {
  MDB_val key = val(version_key), data;
  int rc = present_[0] ? mdb_get(txn, dbis_[0], &key, &data) : MDB_NOTFOUND;
  if (rc == MDB_NOTFOUND) {
    fresh_ = true;
    return;
  }
  check(rc, "read format version");
  found_version_ = decode_format_version(view(data));
  fresh_ = holds_no_records(txn);
}

void lmdb_store::check_format_version(MDB_txn* txn, const std::string& env_dir,
                                      const std::string& refuse_fresh) {
  read_format_version(txn);
  if (fresh_ && !refuse_fresh.empty()) throw std::runtime_error(refuse_fresh);
  auto found = found_version_;
  if (found > format_version || found < 1)
    throw std::runtime_error("data dir metadata in " + env_dir + " has format version " +
                             std::to_string(found) + "; this warren-node reads versions 1 to " +
                             std::to_string(format_version) +
                             (found > format_version ? " (use a newer build)" : ""));
  if (!fresh_) return;
  auto bytes = encode_format_version(format_version);
  MDB_val key = val(version_key), value = val(bytes);
  check(mdb_put(txn, dbis_[0], &key, &value, 0), "write format version");
}

// Opening may rewrite every value in one transaction (seal_unsealed_values), which takes about
// as many new pages as the data holds: the map is made twice the data first (it is address
// space, not disk), so that a directory that filled most of its map still opens.
void lmdb_store::make_room_to_rewrite() {
  MDB_envinfo info{};
  MDB_stat stat{};
  check(mdb_env_info(env_, &info), "read environment info");
  check(mdb_env_stat(env_, &stat), "read environment statistics");
  size_t used = (info.me_last_pgno + 1) * size_t{stat.ms_psize};
  size_t wanted = std::min(2 * used + (size_t{1} << 20), max_map_bytes);
  if (wanted > info.me_mapsize) grow_map(wanted);
}

// Seals the values of a directory written before format 3, in the transaction that opens it:
// all of them or, after a crash, none. A marker says they are sealed, since a format-1
// directory keeps its version until its queue folders are upgraded.
void lmdb_store::seal_unsealed_values(MDB_txn* txn) {
  MDB_val key = val(sealed_marker), data;
  int rc = mdb_get(txn, dbis_[0], &key, &data);
  if (rc == MDB_SUCCESS) return;
  if (rc != MDB_NOTFOUND) check(rc, "read " + sealed_marker);
  for (int table = 1; table < table_count; ++table) {
    std::vector<std::pair<std::string, std::string>> records;
    MDB_cursor* cursor = nullptr;
    check(mdb_cursor_open(txn, dbis_[table], &cursor), "cursor");
    MDB_val k, v;
    for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
      records.emplace_back(std::string(view(k)), std::string(view(v)));
    mdb_cursor_close(cursor);
    if (rc != MDB_NOTFOUND) check(rc, std::string("read ") + names[table]);
    for (const auto& [name, value] : records) {
      auto sealed = seal(static_cast<uint8_t>(table), name, value);
      MDB_val sk = val(name), sv = val(sealed);
      check(mdb_put(txn, dbis_[table], &sk, &sv, 0), std::string("seal ") + names[table]);
    }
  }
  const std::string yes_text = "1";
  MDB_val yes = val(yes_text);
  check(mdb_put(txn, dbis_[0], &key, &yes, 0), "write " + sealed_marker);
  if (found_version_ != 2) return;  // a new directory has 3; format 1 is stamped after upgrading
  auto bytes = encode_format_version(format_version);
  MDB_val version_name = val(version_key), version = val(bytes);
  check(mdb_put(txn, dbis_[0], &version_name, &version, 0), "write format version");
  found_version_ = format_version;
}

void lmdb_store::write_format_version() {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, 0, &t.txn), "begin write");
  auto bytes = encode_format_version(format_version);
  MDB_val key = val(version_key), value = val(bytes);
  check(mdb_put(t.txn, dbis_[0], &key, &value, 0), "write format version");
  t.commit("write format version");
  found_version_ = format_version;
}

lmdb_store::~lmdb_store() {
  if (env_ != nullptr) mdb_env_close(env_);
}

// Writes the batch in one transaction as `plan` says; returns LMDB's code of the first failure
// (the transaction is then aborted). When a condition does not hold, only the index is written.
int lmdb_store::write(const std::vector<meta_mutation>& batch, const write_plan& plan) {
  txn_guard t{resize_mutex_};
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &t.txn); rc != MDB_SUCCESS) return rc;
  if (int rc = write_in(t.txn, batch, plan); rc != MDB_SUCCESS) return rc;
  int rc = mdb_txn_commit(t.txn);
  t.txn = nullptr;
  return rc;
}

// write()'s changes inside a transaction the caller commits.
int lmdb_store::write_in(MDB_txn* txn, const std::vector<meta_mutation>& batch,
                         const write_plan& plan) {
  bool refused = false;
  if (plan.conditions != nullptr) {
    int failed = first_failed_condition(txn, *plan.conditions);
    refused = failed >= 0;
    if (refused && plan.failed != nullptr) *plan.failed = static_cast<size_t>(failed);
  }
  bool replace = plan.replace;
  bool mark_seeded = plan.mark_seeded;
  if (plan.seed) {
    MDB_val key = val(seeded_key), value;
    int rc = mdb_get(txn, dbis_[0], &key, &value);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
    refused = rc == MDB_SUCCESS;
    if (refused && plan.seed_ignored != nullptr) *plan.seed_ignored = true;
    replace = mark_seeded = !refused;
  }
  if (mark_seeded) {
    const std::string yes = "1";
    MDB_val key = val(seeded_key), value = val(yes);
    if (int rc = mdb_put(txn, dbis_[0], &key, &value, 0); rc != MDB_SUCCESS) return rc;
  }
  // Vhosts a snapshot or seed goes without take their exchanges, queues and bindings along, as a
  // vhost deleted by an entry does (below). Not its permissions: those are the log's, and the
  // snapshot has them as the log does (a permission can be set for a vhost deleted meanwhile).
  std::set<std::string> vhosts_before;
  if (replace)
    if (int rc = keys_of(txn, meta_table::vhosts, vhosts_before); rc != MDB_SUCCESS) return rc;
  if (replace)
    if (int rc = erase_log_records(txn); rc != MDB_SUCCESS) return rc;
  if (plan.index != nullptr) {
    auto bytes = std::to_string(*plan.index);
    MDB_val key = val(applied_key), value = val(bytes);
    if (int rc = mdb_put(txn, dbis_[0], &key, &value, 0); rc != MDB_SUCCESS) return rc;
  }
  for (const auto& m : batch) {
    if (refused) break;
    auto dbi = dbis_[1 + static_cast<int>(m.table)];
    MDB_val key = val(m.key);
    int rc = MDB_SUCCESS;
    if (m.erase) {
      rc = mdb_del(txn, dbi, &key, nullptr);
      if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
      // A log entry that deletes a user deletes its permissions, those its proposer did not
      // know of included (granted on another member meanwhile): none outlives the user.
      if (rc == MDB_SUCCESS && plan.index != nullptr && m.table == meta_table::users)
        rc = erase_prefixed(txn, meta_table::permissions, permission_key(m.key, ""));
      if (rc == MDB_SUCCESS && plan.index != nullptr && m.table == meta_table::vhosts)
        rc = erase_vhost_contents(txn, m.key, true);
      // And one deleting an exchange deletes the bindings from and to it, those between
      // exchanges made on another member meanwhile included.
      if (rc == MDB_SUCCESS && plan.index != nullptr && m.table == meta_table::exchanges)
        rc = erase_exchange_bindings(txn, m.key);
      // And one deleting a durable queue deletes its home's own record of it (the others hold
      // none), so a home that stops before its vhost has deleted the queue does not find it again.
      if (rc == MDB_SUCCESS && plan.index != nullptr && m.table == meta_table::queue_homes) {
        MDB_val own = val(m.key);
        rc = mdb_del(txn, dbis_[1 + static_cast<int>(meta_table::queues)], &own, nullptr);
        if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
      }
    } else {
      auto sealed = seal(static_cast<uint8_t>(1 + static_cast<int>(m.table)), m.key, m.value);
      MDB_val value = val(sealed);
      rc = mdb_put(txn, dbi, &key, &value, 0);
    }
    if (rc != MDB_SUCCESS) return rc;
  }
  for (const auto& m : batch)
    if (m.table == meta_table::vhosts && !m.erase) vhosts_before.erase(m.key);
  for (const auto& gone : vhosts_before)
    if (int rc = erase_vhost_contents(txn, gone, false); rc != MDB_SUCCESS) return rc;
  return MDB_SUCCESS;
}

// Every key of `table`, into `out`; LMDB's code of a failure.
int lmdb_store::keys_of(MDB_txn* txn, meta_table table, std::set<std::string>& out) {
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(txn, dbis_[1 + static_cast<int>(table)], &cursor); rc != MDB_SUCCESS)
    return rc;
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
  MDB_val k, v;
  int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
  for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) out.emplace(view(k));
  return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

// Deletes every record of `table` whose key starts with `prefix` (and, given `only`, that it
// chooses); LMDB's code of a failure.
int lmdb_store::erase_prefixed(MDB_txn* txn, meta_table table, const std::string& prefix,
                               const std::function<bool(std::string_view key)>& only) {
  auto dbi = dbis_[1 + static_cast<int>(table)];
  std::vector<std::string> keys;
  {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn, dbi, &cursor); rc != MDB_SUCCESS) return rc;
    std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
    MDB_val k = val(prefix), v;
    // LMDB takes no empty key to look up: every key starts with "".
    int rc = mdb_cursor_get(cursor, &k, &v, prefix.empty() ? MDB_FIRST : MDB_SET_RANGE);
    for (; rc == MDB_SUCCESS && view(k).substr(0, prefix.size()) == prefix;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
      if (!only || only(view(k))) keys.emplace_back(view(k));
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
  }
  for (const auto& key : keys) {
    MDB_val k = val(key);
    if (int rc = mdb_del(txn, dbi, &k, nullptr); rc != MDB_SUCCESS) return rc;
  }
  return MDB_SUCCESS;
}

// Whether `table` holds a record of the log's whose key starts with `prefix` (non-empty);
// LMDB's code of a failure.
int lmdb_store::log_record_under(MDB_txn* txn, meta_table table, const std::string& prefix,
                                 bool& found) {
  found = false;
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(txn, dbis_[1 + static_cast<int>(table)], &cursor); rc != MDB_SUCCESS)
    return rc;
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
  MDB_val k = val(prefix), v;
  int rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
  for (; rc == MDB_SUCCESS && view(k).substr(0, prefix.size()) == prefix;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
    if (in_log(table, view(k))) {
      found = true;
      return MDB_SUCCESS;
    }
  return rc == MDB_NOTFOUND || rc == MDB_SUCCESS ? MDB_SUCCESS : rc;
}

// Every record of the log's (a snapshot or seed replaces them); LMDB's code of a failure.
int lmdb_store::erase_log_records(MDB_txn* txn) {
  for (int table = 1; table < table_count; ++table) {
    auto t = static_cast<meta_table>(table - 1);
    if (!holds_log_records(t)) continue;
    int rc = t == meta_table::bindings
                 ? erase_prefixed(txn, t, "", [t](std::string_view key) { return in_log(t, key); })
                 : mdb_drop(txn, dbis_[table], 0);
    if (rc != MDB_SUCCESS) return rc;
  }
  return MDB_SUCCESS;
}

// The bindings from and to the exchange of `exchange_key`; LMDB's code of a failure.
int lmdb_store::erase_exchange_bindings(MDB_txn* txn, std::string_view exchange_key) {
  auto cut = exchange_key.find('\0');
  if (cut == std::string_view::npos) return MDB_SUCCESS;
  auto vhost = exchange_key.substr(0, cut), name = exchange_key.substr(cut + 1);
  return erase_prefixed(txn, meta_table::bindings, std::string(vhost) + '\0',
                        [name](std::string_view key) {
                          auto b = parse_binding_key(key);
                          return b.source == name || (b.to_exchange && b.destination == name);
                        });
}

int lmdb_store::erase_vhost_contents(MDB_txn* txn, const std::string& vhost,
                                     bool with_permissions) {
  for (auto table :
       {meta_table::exchanges, meta_table::queues, meta_table::bindings, meta_table::queue_homes})
    if (int rc = erase_prefixed(txn, table, exchange_key(vhost, "")); rc != MDB_SUCCESS) return rc;
  if (!with_permissions) return MDB_SUCCESS;
  // Permission keys start with the user: every one is looked at (a few per user).
  auto dbi = dbis_[1 + static_cast<int>(meta_table::permissions)];
  std::vector<std::string> keys;
  {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn, dbi, &cursor); rc != MDB_SUCCESS) return rc;
    std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
    MDB_val k, v;
    int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      auto key = view(k);
      auto separator = key.find('\0');
      if (separator != std::string_view::npos && key.substr(separator + 1) == vhost)
        keys.emplace_back(key);
    }
    if (rc != MDB_NOTFOUND) return rc;
  }
  for (const auto& key : keys) {
    MDB_val k = val(key);
    if (int rc = mdb_del(txn, dbi, &k, nullptr); rc != MDB_SUCCESS) return rc;
  }
  return MDB_SUCCESS;
}

// The position of the first condition that does not hold in `txn`, -1 when all hold; throws
// when LMDB cannot read (the transaction is then aborted, nothing written).
int lmdb_store::first_failed_condition(MDB_txn* txn,
                                       const std::vector<meta_condition>& conditions) {
  for (size_t i = 0; i < conditions.size(); ++i) {
    const auto& c = conditions[i];
    bool found = false;
    if (c.prefix) {
      check(log_record_under(txn, c.table, c.key, found), "read a log entry's condition");
    } else {
      MDB_val key = val(c.key), value;
      int rc = mdb_get(txn, dbis_[1 + static_cast<int>(c.table)], &key, &value);
      if (rc != MDB_NOTFOUND) check(rc, "read a log entry's condition");
      found = rc == MDB_SUCCESS;
    }
    if (found != c.present) return static_cast<int>(i);
  }
  return -1;
}

// The map is address space, not disk: a full one is doubled (grow_map waits until no other
// thread holds a transaction) and the batch written again. Past max_map_bytes
// the write fails with a clear error instead; a full disk fails the commit itself (ENOSPC).
void lmdb_store::apply(const std::vector<meta_mutation>& batch) {
  if (batch.empty()) return;
  write_growing(batch, {});
}

void lmdb_store::write_growing(const std::vector<meta_mutation>& batch, const write_plan& plan) {
  for (;;) {
    int rc = write(batch, plan);
    if (rc == MDB_SUCCESS) return;
    if (rc != MDB_MAP_FULL) check(rc, "write");
    grow_full_map();
  }
}

void lmdb_store::grow_full_map() {
  MDB_envinfo info{};
  check(mdb_env_info(env_, &info), "read environment info");
  if (info.me_mapsize >= max_map_bytes)
    throw std::runtime_error("LMDB: the metadata store is full at its largest map (" +
                             std::to_string(info.me_mapsize >> 20) + " MiB)");
  grow_map(std::min(info.me_mapsize * 2, max_map_bytes));
}

// Waits until no other thread holds a transaction (the log's thread writes and reads beside the
// persistence actor), since a map resized under an open transaction can crash its reader.
void lmdb_store::grow_map(size_t bytes) {
  std::unique_lock<std::shared_mutex> alone(resize_mutex_);
  check(mdb_env_set_mapsize(env_, bytes), "grow the map");
}

metadata_contents lmdb_store::load(std::vector<std::string>* damaged) {
  metadata_contents out;
  out.fresh = fresh_;
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  for (int table = 1; table < table_count; ++table)
    if (present_[table]) load_table(t.txn, table, out, damaged);
  return out;
}

// One table's records into `out`. A damaged one throws, naming its table and key, unless
// `damaged` takes it.
void lmdb_store::load_table(MDB_txn* txn, int table, metadata_contents& out,
                            std::vector<std::string>* damaged) {
  MDB_cursor* cursor = nullptr;
  check(mdb_cursor_open(txn, dbis_[table], &cursor), "cursor");
  std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closer(cursor, mdb_cursor_close);
  MDB_val key, data;
  int rc = mdb_cursor_get(cursor, &key, &data, MDB_FIRST);
  for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &key, &data, MDB_NEXT)) {
    auto problem = take_record(table, view(key), view(data), out);
    if (problem.empty()) continue;
    auto where = std::string("table '") + names[table] + "', key '" + printable_key(view(key)) +
                 "' " + problem;
    if (damaged == nullptr)
      throw std::runtime_error("metadata record damaged: " + where +
                               "; the node does not start on metadata it would have to guess at "
                               "(restore DATA_DIR/meta from a backup; the queue folders are "
                               "untouched)");
    damaged->push_back(where);
  }
  if (rc != MDB_NOTFOUND) check(rc, std::string("read ") + names[table]);
}

// Adds one stored record to `out`; what is wrong with it when it cannot be, else "".
std::string lmdb_store::take_record(int table, std::string_view key, std::string_view stored,
                                    metadata_contents& out) {
  auto value = values_sealed_ ? unseal(static_cast<uint8_t>(table), key, stored)
                              : std::optional<std::string_view>(stored);
  if (!value) return "fails its checksum";
  try {
    decode_into(table, key, *value, out);
  } catch (const std::exception& e) {
    return std::string("does not decode (") + e.what() + ")";
  }
  return {};
}

}  // namespace warren::persistence
