#include "persistence/metadata_fsm.hpp"

#include "core/log.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string_view>

namespace warren::persistence {

namespace {

metadata_fsm& self_of(raft_fsm* fsm) {
  return *static_cast<metadata_fsm*>(fsm->data);
}

std::string_view bytes_of(const raft_buffer* buf) {
  return {static_cast<const char*>(buf->base), buf->len};
}

// What keeps an entry from being applied as it is: a change that could not be stored and read
// back, or a condition on a table or key LMDB cannot look up.
std::string entry_problem(const metadata_entry& entry) {
  for (const auto& m : entry.changes)
    if (auto problem = lmdb_store::change_problem(m); !problem.empty()) return problem;
  for (const auto& c : entry.conditions)
    if (auto problem = lmdb_store::change_problem({c.table, c.key, {}, true}); !problem.empty())
      return "a condition on " + problem;
  return {};
}

}  // namespace

metadata_fsm::metadata_fsm(lmdb_store& store) : store_(store) {
  fsm_.version = 1;  // raft owns the snapshot buffers it is given (raft_malloc)
  fsm_.data = this;
  fsm_.apply = &metadata_fsm::apply;
  fsm_.snapshot = &metadata_fsm::snapshot;
  fsm_.restore = &metadata_fsm::restore;
}

// An entry that does not decode, or holds a change LMDB could not store or read back, is a bug
// of the member that proposed it: every member meets the same bytes at the same index and skips
// them alike, so the members stay equal and none stops on it. A failure to write LMDB otherwise
// (the disk) is returned to raft, which stops applying rather than move on without it.
int metadata_fsm::apply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
  auto& self = self_of(fsm);
  *result = nullptr;
  if (self.raft_ == nullptr) return RAFT_INVALID;  // attach() first: no index without it
  auto index = raft_last_applied(self.raft_) + 1;
  metadata_entry entry;
  std::string problem;
  try {
    entry = decode_metadata_entry(bytes_of(buf));
    problem = entry_problem(entry);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    entry = {};
    ++self.undecodable_;
    log(log_level::error, "metadata",
        "log entry " + std::to_string(index) + " skipped: " + problem);
  }
  self.outcome_ = {};
  bool changed = false;
  try {
    auto done = self.store_.apply_entry(index, entry.changes, entry.conditions,
                                        &self.outcome_.failed_condition, entry.seed);
    self.outcome_.refused = done == lmdb_store::entry_applied::refused;
    self.outcome_.seed_ignored = done == lmdb_store::entry_applied::ignored;
    changed = done == lmdb_store::entry_applied::changed;
  } catch (const std::exception& e) {
    log(log_level::error, "metadata",
        "log entry " + std::to_string(index) + " could not be applied: " + e.what());
    return RAFT_IOERR;
  }
  if (changed && self.listener_) self.listener_(entry.changes, entry.seed);
  // Read by the proposer's callback, which libraft runs before this returns to it.
  *result = &self.outcome_;
  return 0;
}

int metadata_fsm::snapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs) {
  auto& self = self_of(fsm);
  std::string bytes;
  try {
    bytes = encode_metadata_snapshot(
        {self.store_.applied_index(), self.store_.records(), self.store_.log_seeded()});
  } catch (const std::exception& e) {
    log(log_level::error, "metadata", std::string("no snapshot taken: ") + e.what());
    return RAFT_IOERR;
  }
  auto* out = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
  if (out == nullptr) return RAFT_NOMEM;
  out->len = bytes.size();
  out->base = raft_malloc(bytes.size());
  if (out->base == nullptr) {
    raft_free(out);
    return RAFT_NOMEM;
  }
  std::memcpy(out->base, bytes.data(), bytes.size());
  *bufs = out;
  *n_bufs = 1;
  return 0;
}

// On success the state machine owns (and frees) the snapshot's bytes, as libraft's version-1
// contract says; on failure raft keeps them.
int metadata_fsm::restore(raft_fsm* fsm, raft_buffer* buf) {
  auto& self = self_of(fsm);
  try {
    auto snap = decode_metadata_snapshot(bytes_of(buf));
    // raft_start restores a member's own last snapshot, while its LMDB is durable and may be
    // further on: rewriting it would roll it back until the log is applied again.
    for (const auto& m : snap.records)
      if (auto problem = lmdb_store::change_problem(m); !problem.empty())
        throw std::runtime_error("it holds " + problem);
    if (snap.applied_index > self.store_.applied_index()) {
      self.store_.replace_all(snap.records, snap.applied_index, snap.seeded);
      ++self.restored_;
      if (self.listener_) self.listener_(snap.records, true);
    }
  } catch (const std::exception& e) {
    log(log_level::error, "metadata", std::string("snapshot not restored: ") + e.what());
    return RAFT_IOERR;
  }
  raft_free(buf->base);
  return 0;
}

}  // namespace warren::persistence
