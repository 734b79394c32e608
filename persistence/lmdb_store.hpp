// lmdb_store: the metadata database (LMDB) of a data directory.
//
// Databases: "meta" (format version), "vhosts", "exchanges", "queues", "bindings", "users",
// "permissions", "members" (cluster peers), "cluster" (this node's metadata version), "streams"
// (consumer groups' committed offsets), "grants" (capability grants, by their token's hash),
// "queue_homes" (the metadata log's durable queues and their nodes), with keys from
// metadata_codec.hpp. apply() writes a batch of mutations in one write transaction (LMDB
// fsyncs on commit), so a batch is on disk, whole, or not at all.
//
// Caveats: one writer at a time per table set: the persistence actor, and the metadata log's
// thread (metadata_fsm) for the tables the log carries. Transactions from several threads are
// safe, also while the map grows (a writer that needs a larger map waits until no transaction
// is open, as LMDB requires). Opening throws std::runtime_error, naming
// the file and the problem, rather than start on metadata it cannot trust: a format version
// newer than this build's (or older than 1), a data.mdb shorter than its own last page (reading it
// would crash the process with SIGBUS), or no metadata at all where `refuse_fresh` says there must
// be some (queue folders exist: a node that started empty would orphan, then remove, their
// messages). A corrupt record found by load() throws too.
//
// Opened `read_only` (for `warren-node --check`), the store writes nothing at all: no lock file,
// no table created, no value sealed, no version stamped; load() can then list every damaged
// record instead of stopping at the first.
#pragma once

#include "persistence/metadata_codec.hpp"

#include <lmdb.h>

#include <functional>
#include <map>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace warren::persistence {

enum class meta_table : uint8_t {
  vhosts,
  exchanges,
  queues,
  bindings,
  users,
  permissions,
  members,
  cluster,
  streams,
  grants,
  queue_homes  // the log's durable queues: name, declaration and home node (QueueRecord.home)
};

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

/// What a metadata log entry's changes depend on: a key present, or absent, when the entry is
/// applied. Checked on every member alike in log order, so that of two members creating one
/// name at once exactly one succeeds, whichever the client asked.
struct meta_condition {
  meta_table table = meta_table::vhosts;
  std::string key;
  bool present = false;
  /// Any of the log's records whose key starts with `key` rather than the one of that key
  /// ("absent": none; each member's own records, which differ between members, do not count).
  bool prefix = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_condition& x) {
  return f(x.table, x.key, x.present, x.prefix);
}

struct metadata_contents {
  std::vector<std::string> vhosts;
  std::map<std::string, vhost_limits> limits;  // of the vhosts that have any
  std::vector<stored_exchange> exchanges;
  std::vector<stored_queue> queues;
  std::vector<stored_binding> bindings;
  std::vector<user_record> users;
  std::vector<permission_record> permissions;
  std::vector<cluster_member> members;  // the other nodes of its cluster
  uint64_t metadata_version = 0;        // its shared-metadata changes (cluster_actor.hpp)
  std::vector<stored_stream_offset> stream_offsets;  // consumer groups' committed offsets
  std::vector<grant_record> grants;
  std::vector<stored_queue> queue_homes;  // the metadata log's durable queues, spec.home set
  bool fresh = false;                     // the directory was new
};

class lmdb_store {
 public:
  /// 2: segment files with file headers, checksummed frames and separate mark files.
  /// 3: format 2, and every metadata value sealed with a checksum (record_seal.hpp). The queue
  /// folders are as in format 2; a format-2 directory is sealed in place when opened.
  static constexpr uint32_t format_version = 3;

  /// The map LMDB starts with: address space only, the file grows as pages are used. A full
  /// map is doubled, up to max_map_bytes.
  static constexpr size_t default_map_bytes = size_t{1} << 30;
  static constexpr size_t max_map_bytes = size_t{1} << 40;

  /// With a non-empty `refuse_fresh`, a directory without metadata is refused with that text
  /// instead of being started as a new one. `map_bytes` is the map to start with (at least
  /// what the file holds).
  explicit lmdb_store(const std::string& env_dir, const std::string& refuse_fresh = {},
                      size_t map_bytes = default_map_bytes);

  struct read_only_t {
    explicit read_only_t() = default;
  };
  static constexpr read_only_t read_only{};
  /// Opens an existing environment to read it (MDB_RDONLY | MDB_NOLOCK: the caller holds the
  /// data dir's lock, so nothing writes meanwhile). Throws std::runtime_error when it cannot be
  /// opened or data.mdb is truncated; a format version out of range is left to the caller
  /// (found_version()), and apply() fails.
  lmdb_store(const std::string& env_dir, read_only_t);

  /// The format version the directory had when opened (format_version for a new one). An older
  /// one (1) stays so until write_format_version(), after its queue folders are upgraded.
  uint32_t found_version() const { return found_version_; }
  void write_format_version();
  ~lmdb_store();

  lmdb_store(const lmdb_store&) = delete;
  lmdb_store& operator=(const lmdb_store&) = delete;

  /// Writes the batch in one transaction, growing a full map; throws std::runtime_error if it
  /// could not commit. Values are sealed with their checksum on the way.
  void apply(const std::vector<meta_mutation>& batch);

  /// Reads everything. A value whose seal does not match, or that does not decode, throws
  /// std::runtime_error naming its table and key: the node does not start on metadata it would
  /// have to guess at. Given `damaged`, such records are listed there instead ("table 'queues',
  /// key '/\x00q' fails its checksum") and left out of what is returned.
  metadata_contents load(std::vector<std::string>* damaged = nullptr);

  /// The tables the environment holds (all of them once opened for writing).
  std::vector<std::string> tables() const;

  // --- the metadata as a Raft log's state machine (persistence/metadata_fsm.hpp) ---------------

  /// Whether the metadata log carries the record of `key` in `table`: users, permissions, vhosts
  /// (with their limits), durable exchanges, the bindings between them, and durable queues'
  /// names with their home nodes (queue_homes). The other records join it as their changes move
  /// to the log (issue 33); until then each node's own (its queues' records with their message
  /// folders, its bindings to them) stay out of snapshots and seeds, which replace what a member
  /// holds of the log's records.
  static bool in_log(meta_table table, std::string_view key);
  /// Whether `table` holds records of the log (all of them, or some: bindings).
  static bool holds_log_records(meta_table table) {
    return table == meta_table::users || table == meta_table::permissions ||
           table == meta_table::vhosts || table == meta_table::exchanges ||
           table == meta_table::bindings || table == meta_table::queue_homes;
  }
  /// What keeps `m` from being stored and read back (a key LMDB refuses, a value that does not
  /// decode as its table's record), or "". A change from the log is checked before it is applied.
  static std::string change_problem(const meta_mutation& m);
  /// The same for a condition: what keeps LMDB from looking it up, or "".
  static std::string condition_problem(const meta_condition& c);
  /// The last log index applied here; 0 when none was.
  uint64_t applied_index();
  /// What apply_entry did with an entry.
  enum class entry_applied {
    skipped,  // its index was applied before (a restarted member is given its log again)
    changed,  // its changes and its index are stored
    refused,  // a condition did not hold: only its index is stored
    ignored,  // a seed after the log's first one: only its index is stored
  };
  /// Applies log entry `index` and records its index, in one transaction, if every condition
  /// holds; when one does not, only the index, and `*failed` (given) says which condition.
  /// A seed (`seed`) replaces every record of the log's tables with `batch`, unless one was
  /// applied before.
  entry_applied apply_entry(uint64_t index, const std::vector<meta_mutation>& batch,
                            const std::vector<meta_condition>& conditions = {},
                            size_t* failed = nullptr, bool seed = false);
  /// One log entry for apply_entries: what it holds, and (filled in) what applying it did.
  struct entry_write {
    uint64_t index = 0;
    const std::vector<meta_mutation>* changes = nullptr;
    const std::vector<meta_condition>* conditions = nullptr;
    bool seed = false;
    entry_applied done = entry_applied::skipped;
    size_t failed = 0;  // the condition that did not hold, when refused
  };
  /// Applies consecutive log entries, in order, as apply_entry would one by one, but in one
  /// transaction and so with one sync: each entry's conditions see the changes of those before
  /// it. All are stored or, when this throws, none.
  void apply_entries(std::vector<entry_write>& entries);
  /// Whether a seed entry was applied here (or came with a snapshot) since the data dir last
  /// started a log.
  bool log_seeded();
  /// Every record of the tables the log carries, unsealed; a damaged one throws.
  std::vector<meta_mutation> records();
  /// Replaces every record of the tables the log carries with `records`, applied up to
  /// `index`, in one transaction (a snapshot taken from another member).
  void replace_all(const std::vector<meta_mutation>& records, uint64_t index, bool seeded);

  /// Which metadata log this data dir belongs to, kept beside it so that a lost DATA_DIR/raft
  /// is noticed: a member that made a new log with the same raft id would vote again in terms
  /// it already voted in, and could elect a second leader.
  struct log_identity {
    enum class stage : uint8_t {
      none,      // this data dir never had a log
      founding,  // about to make a log that starts a cluster: no folder yet is fine
      joining,   // about to make an empty log for a running cluster's leader to fill
      open,      // its log was made and opened: the folder must be there
    };
    stage at = stage::none;
    std::string node;  // the node name the log's raft id comes from
  };
  log_identity read_log_identity();
  /// Records `id`; a founding or joining log starts with nothing applied, so the applied index
  /// is reset with it (in the same transaction).
  void write_log_identity(const log_identity& id);

 private:
  static constexpr int table_count = 12;
  MDB_env* env_ = nullptr;
  MDB_dbi dbis_[table_count] = {};  // meta, vhosts, exchanges, queues, bindings, users,
                                    // permissions, members, cluster, streams, grants,
                                    // queue_homes
  bool present_[table_count] = {};  // read-only: the tables found
  bool values_sealed_ = true;       // read-only: false for a format-2 directory not yet sealed
  bool fresh_ = false;
  uint32_t found_version_ = format_version;
  std::shared_mutex resize_mutex_;  // shared by every transaction, held alone to grow the map

  void open_env(const std::string& env_dir, unsigned flags, size_t map_bytes);
  void close_env();
  /// How one write transaction goes: with the log index it applies (`index`), after emptying
  /// the tables the log carries (`replace`), and only if `conditions` hold.
  struct write_plan {
    const uint64_t* index = nullptr;
    bool replace = false;
    const std::vector<meta_condition>* conditions = nullptr;
    size_t* failed = nullptr;      // set to the first condition that did not hold
    bool seed = false;             // replace and mark seeded, unless seeded already
    bool* seed_ignored = nullptr;  // set when a seed found the store seeded
    bool mark_seeded = false;      // with replace: a snapshot of a seeded log
  };
  int write(const std::vector<meta_mutation>& batch, const write_plan& plan);
  int write_in(MDB_txn* txn, const std::vector<meta_mutation>& batch, const write_plan& plan);
  int write_entries(std::vector<entry_write>& entries);
  static int read_applied_index(MDB_txn* txn, MDB_dbi meta, uint64_t& index);
  void write_growing(const std::vector<meta_mutation>& batch, const write_plan& plan);
  int first_failed_condition(MDB_txn* txn, const std::vector<meta_condition>& conditions);
  int log_record_under(MDB_txn* txn, meta_table table, const std::string& prefix, bool& found);
  int erase_prefixed(MDB_txn* txn, meta_table table, const std::string& prefix,
                     const std::function<bool(std::string_view key)>& only = {});
  int erase_log_records(MDB_txn* txn);
  int erase_exchange_bindings(MDB_txn* txn, std::string_view exchange_key);
  int keys_of(MDB_txn* txn, meta_table table, std::set<std::string>& out);
  // A vhost deleted through the log (or missing from a snapshot or seed): its exchanges, queues
  // and bindings go in the same transaction, so that none outlives it here should the node stop
  // before its vhost actor has deleted them; its permissions too for an entry (a snapshot's are
  // the log's own).
  int erase_vhost_contents(MDB_txn* txn, const std::string& vhost, bool with_permissions);
  void check_not_truncated(const std::string& env_dir);
  void read_format_version(MDB_txn* txn);
  void check_format_version(MDB_txn* txn, const std::string& env_dir,
                            const std::string& refuse_fresh);
  void make_room_to_rewrite();
  void grow_map(size_t bytes);
  void grow_full_map();
  void seal_unsealed_values(MDB_txn* txn);
  bool holds_no_records(MDB_txn* txn);
  void load_table(MDB_txn* txn, int table, metadata_contents& out,
                  std::vector<std::string>* damaged);
  std::string take_record(int table, std::string_view key, std::string_view stored,
                          metadata_contents& out);
};

}  // namespace warren::persistence
