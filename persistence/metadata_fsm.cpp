#include "persistence/metadata_fsm.hpp"

#include "core/log.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <algorithm>
#include <cstddef>
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
    if (auto problem = lmdb_store::condition_problem(c); !problem.empty())
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
  // Grouped, with the disk failing: entries are kept up to a bound, then refused, so that the
  // memory they take stays bounded (on a follower libraft then stops until a restart).
  if (self.grouped_ && self.unwritten_.size() >= max_unwritten) return RAFT_IOERR;
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
  if (self.grouped_) return self.keep_unwritten(index, std::move(entry), result);
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

int metadata_fsm::keep_unwritten(uint64_t index, metadata_entry entry, void** result) {
  unwritten_.push_back({index, std::move(entry)});
  outcome_.deferred = true;
  *result = &outcome_;
  return 0;
}

// In groups of at most max_group entries, so that a member catching up on many entries in one
// iteration does not outgrow one LMDB transaction; each group written is done with.
bool metadata_fsm::write_applied() {
  while (!unwritten_.empty()) {
    auto count = std::min(unwritten_.size(), max_group);
    if (!write_group(count)) return false;
    unwritten_.erase(unwritten_.begin(), unwritten_.begin() + static_cast<std::ptrdiff_t>(count));
  }
  return true;
}

// The first `count` unwritten entries, in one transaction; their outcomes kept for
// take_written() and the listener told of each change.
bool metadata_fsm::write_group(size_t count) {
  std::vector<lmdb_store::entry_write> writes;
  writes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const auto& u = unwritten_[i];
    writes.push_back({u.index, &u.entry.changes, &u.entry.conditions, u.entry.seed});
  }
  try {
    store_.apply_entries(writes);
  } catch (const std::exception& e) {
    if (!write_failing_)
      log(log_level::error, "metadata",
          "log entries " + std::to_string(writes.front().index) + " to " +
              std::to_string(unwritten_.back().index) + " could not be applied (" + e.what() +
              "); they are kept and written again");
    write_failing_ = true;
    return false;
  }
  if (write_failing_)
    log(log_level::info, "metadata", "the log entries that could not be applied are now");
  write_failing_ = false;
  for (size_t i = 0; i < count; ++i) {
    outcome o;
    o.refused = writes[i].done == lmdb_store::entry_applied::refused;
    o.failed_condition = writes[i].failed;
    o.seed_ignored = writes[i].done == lmdb_store::entry_applied::ignored;
    written_.emplace_back(writes[i].index, o);
    if (writes[i].done == lmdb_store::entry_applied::changed && listener_)
      listener_(unwritten_[i].entry.changes, unwritten_[i].entry.seed);
  }
  return true;
}

std::vector<std::pair<uint64_t, metadata_fsm::outcome>> metadata_fsm::take_written() {
  auto out = std::move(written_);
  written_.clear();
  return out;
}

uint64_t metadata_fsm::applied_durably() const {
  if (!unwritten_.empty()) return unwritten_.front().index - 1;
  return raft_ == nullptr ? 0 : raft_last_applied(raft_);
}

// A snapshot, taken or restored, starts from LMDB holding every entry applied: raft names the
// snapshot after its own applied index.
int metadata_fsm::snapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs) {
  auto& self = self_of(fsm);
  if (!self.write_applied()) return RAFT_IOERR;
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
  if (!self.write_applied()) return RAFT_IOERR;
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
