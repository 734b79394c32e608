#include "persistence/lmdb_store.hpp"

#include "persistence/data_dir.hpp"
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

namespace {

constexpr const char* names[] = {"meta",     "vhosts",  "exchanges",   "queues",
                                 "bindings", "users",   "permissions", "members",
                                 "cluster",  "streams", "grants"};
const std::string version_key = "format-version";
const std::string sealed_marker = "values-sealed";
const std::string seeded_key = "log-seeded";      // a seed entry was applied: "1"
const std::string applied_key = "log-applied";    // the metadata log's last index applied
const std::string identity_key = "log-identity";  // lmdb_store::log_identity, as "STAGE NODE"
constexpr const char* stage_names[] = {"none", "founding", "joining", "open"};

void check(int rc, const std::string& what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error("LMDB: " + what + ": " + mdb_strerror(rc));
}

// Decodes one record's value into `out`; throws std::runtime_error when it is malformed.
void decode_into(int table, std::string_view key, std::string_view bytes, metadata_contents& out) {
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
  }
}

MDB_val val(const std::string& s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view view(const MDB_val& v) {
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

}  // namespace

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
  bool refused = false;
  if (plan.conditions != nullptr) {
    int failed = first_failed_condition(t.txn, *plan.conditions);
    refused = failed >= 0;
    if (refused && plan.failed != nullptr) *plan.failed = static_cast<size_t>(failed);
  }
  bool replace = plan.replace;
  bool mark_seeded = plan.mark_seeded;
  if (plan.seed) {
    MDB_val key = val(seeded_key), value;
    int rc = mdb_get(t.txn, dbis_[0], &key, &value);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
    refused = rc == MDB_SUCCESS;
    if (refused && plan.seed_ignored != nullptr) *plan.seed_ignored = true;
    replace = mark_seeded = !refused;
  }
  if (mark_seeded) {
    const std::string yes = "1";
    MDB_val key = val(seeded_key), value = val(yes);
    if (int rc = mdb_put(t.txn, dbis_[0], &key, &value, 0); rc != MDB_SUCCESS) return rc;
  }
  for (int table = 1; replace && table < table_count; ++table)
    if (in_log(static_cast<meta_table>(table - 1)))
      if (int rc = mdb_drop(t.txn, dbis_[table], 0); rc != MDB_SUCCESS) return rc;
  if (plan.index != nullptr) {
    auto bytes = std::to_string(*plan.index);
    MDB_val key = val(applied_key), value = val(bytes);
    if (int rc = mdb_put(t.txn, dbis_[0], &key, &value, 0); rc != MDB_SUCCESS) return rc;
  }
  for (const auto& m : batch) {
    if (refused) break;
    auto dbi = dbis_[1 + static_cast<int>(m.table)];
    MDB_val key = val(m.key);
    int rc = MDB_SUCCESS;
    if (m.erase) {
      rc = mdb_del(t.txn, dbi, &key, nullptr);
      if (rc == MDB_NOTFOUND) rc = MDB_SUCCESS;
      // A log entry that deletes a user deletes its permissions, those its proposer did not
      // know of included (granted on another member meanwhile): none outlives the user.
      if (rc == MDB_SUCCESS && plan.index != nullptr && m.table == meta_table::users)
        rc = erase_prefixed(t.txn, meta_table::permissions, permission_key(m.key, ""));
    } else {
      auto sealed = seal(static_cast<uint8_t>(1 + static_cast<int>(m.table)), m.key, m.value);
      MDB_val value = val(sealed);
      rc = mdb_put(t.txn, dbi, &key, &value, 0);
    }
    if (rc != MDB_SUCCESS) return rc;
  }
  int rc = mdb_txn_commit(t.txn);
  t.txn = nullptr;
  return rc;
}

// Deletes every record of `table` whose key starts with `prefix`; LMDB's code of a failure.
int lmdb_store::erase_prefixed(MDB_txn* txn, meta_table table, const std::string& prefix) {
  auto dbi = dbis_[1 + static_cast<int>(table)];
  std::vector<std::string> keys;
  {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn, dbi, &cursor); rc != MDB_SUCCESS) return rc;
    std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
    MDB_val k = val(prefix), v;
    int rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    for (; rc == MDB_SUCCESS && view(k).substr(0, prefix.size()) == prefix;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT))
      keys.emplace_back(view(k));
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return rc;
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
    MDB_val key = val(c.key), value;
    int rc = mdb_get(txn, dbis_[1 + static_cast<int>(c.table)], &key, &value);
    if (rc != MDB_NOTFOUND) check(rc, "read a log entry's condition");
    if ((rc == MDB_SUCCESS) != c.present) return static_cast<int>(i);
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
    MDB_envinfo info{};
    check(mdb_env_info(env_, &info), "read environment info");
    if (info.me_mapsize >= max_map_bytes)
      throw std::runtime_error("LMDB: the metadata store is full at its largest map (" +
                               std::to_string(info.me_mapsize >> 20) + " MiB)");
    grow_map(std::min(info.me_mapsize * 2, max_map_bytes));
  }
}

// Waits until no other thread holds a transaction (the log's thread writes and reads beside the
// persistence actor), since a map resized under an open transaction can crash its reader.
void lmdb_store::grow_map(size_t bytes) {
  std::unique_lock<std::shared_mutex> alone(resize_mutex_);
  check(mdb_env_set_mapsize(env_, bytes), "grow the map");
}

std::string lmdb_store::change_problem(const meta_mutation& m) {
  constexpr size_t max_key_bytes = 511;  // LMDB's default build (mdb_env_get_maxkeysize)
  auto table = 1 + static_cast<int>(m.table);
  if (table < 1 || table >= table_count) return "no table " + std::to_string(table - 1);
  if (!in_log(m.table))
    return std::string("table '") + names[table] + "', which is this node's own, not the log's";
  if (m.key.empty()) return std::string("an empty key in table '") + names[table] + "'";
  if (m.key.size() > max_key_bytes)
    return "a key of " + std::to_string(m.key.size()) + " bytes in table '" + names[table] +
           "' (at most " + std::to_string(max_key_bytes) + ")";
  if (m.erase) return {};
  metadata_contents scratch;
  try {
    decode_into(table, m.key, m.value, scratch);
  } catch (const std::exception& e) {
    return std::string("a value in table '") + names[table] + "' that does not decode (" +
           e.what() + ")";
  }
  // A record is found by its key and known by what it holds: the two must name the same thing.
  bool named_by_key = m.table == meta_table::users
                          ? !scratch.users.empty() && user_key(scratch.users.back().name) == m.key
                      : m.table == meta_table::permissions
                          ? !scratch.permissions.empty() &&
                                permission_key(scratch.permissions.back().user,
                                               scratch.permissions.back().vhost) == m.key
                          : true;
  if (!named_by_key)
    return std::string("a record in table '") + names[table] + "' that its key does not name";
  return {};
}

uint64_t lmdb_store::applied_index() {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  MDB_val key = val(applied_key), value;
  int rc = mdb_get(t.txn, dbis_[0], &key, &value);
  if (rc == MDB_NOTFOUND) return 0;
  check(rc, "read " + applied_key);
  uint64_t index = 0;
  auto text = view(value);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec != std::errc() || end != text.data() + text.size())
    throw std::runtime_error("metadata record damaged: table 'meta', key '" + applied_key +
                             "' is not a number");
  return index;
}

bool lmdb_store::log_seeded() {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  MDB_val key = val(seeded_key), value;
  int rc = mdb_get(t.txn, dbis_[0], &key, &value);
  if (rc == MDB_NOTFOUND) return false;
  check(rc, "read " + seeded_key);
  return true;
}

lmdb_store::log_identity lmdb_store::read_log_identity() {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  MDB_val key = val(identity_key), value;
  int rc = mdb_get(t.txn, dbis_[0], &key, &value);
  if (rc == MDB_NOTFOUND) return {};
  check(rc, "read " + identity_key);
  auto text = view(value);
  auto space = text.find(' ');
  log_identity id;
  for (uint8_t i = 0; space != std::string_view::npos && i < std::size(stage_names); ++i)
    if (text.substr(0, space) == stage_names[i]) {
      id.at = static_cast<log_identity::stage>(i);
      id.node = std::string(text.substr(space + 1));
      return id;
    }
  throw std::runtime_error("metadata record damaged: table 'meta', key '" + identity_key +
                           "' is not a stage and a node name");
}

void lmdb_store::write_log_identity(const log_identity& id) {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, 0, &t.txn), "begin write");
  auto bytes = std::string(stage_names[static_cast<int>(id.at)]) + " " + id.node;
  MDB_val key = val(identity_key), value = val(bytes);
  check(mdb_put(t.txn, dbis_[0], &key, &value, 0), "write " + identity_key);
  if (id.at == log_identity::stage::founding || id.at == log_identity::stage::joining) {
    // A new log starts from nothing: its entries are not the ones a former log applied.
    for (const auto* name : {&applied_key, &seeded_key}) {
      MDB_val key = val(*name);
      int rc = mdb_del(t.txn, dbis_[0], &key, nullptr);
      if (rc != MDB_NOTFOUND) check(rc, "reset " + *name);
    }
  }
  t.commit("write " + identity_key);
}

lmdb_store::entry_applied lmdb_store::apply_entry(uint64_t index,
                                                  const std::vector<meta_mutation>& batch,
                                                  const std::vector<meta_condition>& conditions,
                                                  size_t* failed, bool seed) {
  if (index <= applied_index()) return entry_applied::skipped;
  size_t failed_at = conditions.size();
  bool seed_ignored = false;
  write_plan plan;
  plan.index = &index;
  plan.conditions = &conditions;
  plan.failed = &failed_at;
  plan.seed = seed;
  plan.seed_ignored = &seed_ignored;
  write_growing(batch, plan);
  if (seed_ignored) return entry_applied::ignored;
  if (failed_at == conditions.size()) return entry_applied::changed;
  if (failed != nullptr) *failed = failed_at;
  return entry_applied::refused;
}

void lmdb_store::replace_all(const std::vector<meta_mutation>& records, uint64_t index,
                             bool seeded) {
  write_plan plan;
  plan.index = &index;
  plan.replace = true;
  plan.mark_seeded = seeded;
  write_growing(records, plan);
}

std::vector<meta_mutation> lmdb_store::records() {
  std::vector<meta_mutation> out;
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  for (int table = 1; table < table_count; ++table) {
    if (!in_log(static_cast<meta_table>(table - 1))) continue;
    MDB_cursor* cursor = nullptr;
    check(mdb_cursor_open(t.txn, dbis_[table], &cursor), "cursor");
    std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
    MDB_val k, v;
    int rc = MDB_SUCCESS;
    for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      auto value = unseal(static_cast<uint8_t>(table), view(k), view(v));
      if (!value)
        throw std::runtime_error(std::string("metadata record damaged: table '") + names[table] +
                                 "', key '" + std::string(view(k)) + "' fails its checksum");
      out.push_back(
          {static_cast<meta_table>(table - 1), std::string(view(k)), std::string(*value), false});
    }
    if (rc != MDB_NOTFOUND) check(rc, std::string("read ") + names[table]);
  }
  return out;
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
