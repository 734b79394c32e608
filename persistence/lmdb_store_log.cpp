// lmdb_store's side of the metadata log (persistence/metadata_fsm.hpp): what an entry may
// change, the index applied, the seed, the log's identity, applying entries and snapshots.
#include "persistence/lmdb_detail.hpp"
#include "persistence/lmdb_store.hpp"
#include "persistence/record_seal.hpp"

#include <charconv>
#include <cstdint>
#include <iterator>
#include <memory>

namespace warren::persistence {

using namespace lmdb_detail;

bool lmdb_store::in_log(meta_table table, std::string_view key) {
  if (table == meta_table::bindings) return parse_binding_key(key).to_exchange;
  return holds_log_records(table);
}

std::string lmdb_store::change_problem(const meta_mutation& m) {
  constexpr size_t max_key_bytes = 511;  // LMDB's default build (mdb_env_get_maxkeysize)
  auto table = 1 + static_cast<int>(m.table);
  if (table < 1 || table >= table_count) return "no table " + std::to_string(table - 1);
  if (m.key.empty()) return std::string("an empty key in table '") + names[table] + "'";
  if (!in_log(m.table, m.key))
    return std::string("a record of table '") + names[table] +
           "', which is this node's own, not the log's";
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
  bool named_by_key =
      m.table == meta_table::users
          ? !scratch.users.empty() && user_key(scratch.users.back().name) == m.key
      : m.table == meta_table::permissions
          ? !scratch.permissions.empty() &&
                permission_key(scratch.permissions.back().user, scratch.permissions.back().vhost) ==
                    m.key
      : m.table == meta_table::vhosts
          ? !scratch.vhosts.empty() && vhost_key(scratch.vhosts.back()) == m.key
      : m.table == meta_table::exchanges
          ? !scratch.exchanges.empty() && exchange_key(scratch.exchanges.back().vhost,
                                                       scratch.exchanges.back().spec.name) == m.key
      : m.table == meta_table::bindings
          ? !scratch.bindings.empty() && scratch.bindings.back().spec.to_exchange &&
                binding_key(scratch.bindings.back().vhost, scratch.bindings.back().spec) == m.key
      : m.table == meta_table::queue_homes
          ? !scratch.queue_homes.empty() && !scratch.queue_homes.back().spec.home.empty() &&
                queue_key(scratch.queue_homes.back().vhost, scratch.queue_homes.back().spec.name) ==
                    m.key
          : true;
  if (!named_by_key)
    return std::string("a record in table '") + names[table] + "' that its key does not name";
  return {};
}

std::string lmdb_store::condition_problem(const meta_condition& c) {
  if (!c.prefix) return change_problem({c.table, c.key, {}, true});
  auto table = 1 + static_cast<int>(c.table);
  if (table < 1 || table >= table_count) return "no table " + std::to_string(table - 1);
  if (!holds_log_records(c.table))
    return std::string("table '") + names[table] + "', which holds none of the log's records";
  if (c.key.empty() || c.key.size() > 511)
    return "a key prefix of " + std::to_string(c.key.size()) + " bytes in table '" + names[table] +
           "' (1 to 511)";
  return {};
}

uint64_t lmdb_store::applied_index() {
  txn_guard t{resize_mutex_};
  check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t.txn), "begin read");
  uint64_t index = 0;
  check(read_applied_index(t.txn, dbis_[0], index), "read " + applied_key);
  return index;
}

// The applied index as `txn` sees it (0 when none was applied); LMDB's error code, or a throw
// when the record is damaged.
int lmdb_store::read_applied_index(MDB_txn* txn, MDB_dbi meta, uint64_t& index) {
  index = 0;
  MDB_val key = val(applied_key), value;
  int rc = mdb_get(txn, meta, &key, &value);
  if (rc == MDB_NOTFOUND) return MDB_SUCCESS;
  if (rc != MDB_SUCCESS) return rc;
  auto text = view(value);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
  if (ec != std::errc() || end != text.data() + text.size())
    throw std::runtime_error("metadata record damaged: table 'meta', key '" + applied_key +
                             "' is not a number");
  return MDB_SUCCESS;
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
  std::vector<entry_write> one{{index, &batch, &conditions, seed}};
  apply_entries(one);
  if (one[0].done == entry_applied::refused && failed != nullptr) *failed = one[0].failed;
  return one[0].done;
}

// A full map is grown and every entry written again, as apply() does with a batch.
void lmdb_store::apply_entries(std::vector<entry_write>& entries) {
  if (entries.empty()) return;
  for (;;) {
    int rc = write_entries(entries);
    if (rc == MDB_SUCCESS) return;
    if (rc != MDB_MAP_FULL) check(rc, "write log entries");
    grow_full_map();
  }
}

// The entries raft hands a restarted member again (up to the index LMDB holds) are skipped.
int lmdb_store::write_entries(std::vector<entry_write>& entries) {
  txn_guard t{resize_mutex_};
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &t.txn); rc != MDB_SUCCESS) return rc;
  uint64_t applied = 0;
  if (int rc = read_applied_index(t.txn, dbis_[0], applied); rc != MDB_SUCCESS) return rc;
  static const std::vector<meta_condition> none;
  for (auto& e : entries) {
    e.done = entry_applied::skipped;
    if (e.index <= applied) continue;
    size_t failed_at = SIZE_MAX;
    bool seed_ignored = false;
    write_plan plan;
    plan.index = &e.index;
    plan.conditions = e.conditions != nullptr ? e.conditions : &none;
    plan.failed = &failed_at;
    plan.seed = e.seed;
    plan.seed_ignored = &seed_ignored;
    static const std::vector<meta_mutation> nothing;
    if (int rc = write_in(t.txn, e.changes != nullptr ? *e.changes : nothing, plan);
        rc != MDB_SUCCESS)
      return rc;
    applied = e.index;
    e.done = seed_ignored            ? entry_applied::ignored
             : failed_at == SIZE_MAX ? entry_applied::changed
                                     : entry_applied::refused;
    if (e.done == entry_applied::refused) e.failed = failed_at;
  }
  int rc = mdb_txn_commit(t.txn);
  t.txn = nullptr;
  return rc;
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
    auto of = static_cast<meta_table>(table - 1);
    if (!holds_log_records(of)) continue;
    MDB_cursor* cursor = nullptr;
    check(mdb_cursor_open(t.txn, dbis_[table], &cursor), "cursor");
    std::unique_ptr<MDB_cursor, void (*)(MDB_cursor*)> closing(cursor, mdb_cursor_close);
    MDB_val k, v;
    int rc = MDB_SUCCESS;
    for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
      if (!in_log(of, view(k))) continue;
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

}  // namespace warren::persistence
