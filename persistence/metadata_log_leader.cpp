// metadata_log's leader duties (metadata_log.hpp): a new leader's barrier and seed, and the
// empty entry after a commit that tells followers of it. All run on the log's thread, from the
// check after each loop iteration, never from inside raft's callbacks.
#include "core/log.hpp"
#include "persistence/metadata_log.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace warren::persistence {

// From the check after each loop iteration, never from inside raft's callbacks: raft_apply is
// not for raft's own callbacks. The seed goes in before the leader counts as ready, so that no
// change waiting on the same iteration is appended ahead of it.
void metadata_log::commit_own_term() {
  if (raft_state(&raft_) != RAFT_LEADER) return;
  auto term = raft_.current_term;
  if (barrier_applied_term_ == term && committed_term_ != term) {
    seed_if_unseeded();
    committed_term_ = term;
    submit_waiting();
    return;
  }
  if (barrier_term_ == term) return;
  auto* b = new barrier{this, raft_.current_term, {}};
  b->req.data = b;
  if (raft_barrier(&raft_, &b->req, &metadata_log::on_barrier) != 0) {
    delete b;  // out of memory, or leadership already lost: the next iteration tries again
    return;
  }
  barrier_term_ = b->term;
}

void metadata_log::on_barrier(struct raft_barrier* req, int status) {
  auto* b = static_cast<barrier*>(req->data);
  auto* self = b->log;
  if (status == 0)
    self->barrier_applied_term_ = std::max(self->barrier_applied_term_, b->term);
  else if (self->barrier_term_ == b->term)
    self->barrier_term_ = 0;  // still leading in that term (an I/O error): tried again
  delete b;
}

// Runs on the leader once its barrier is applied, before any waiting change is submitted.
void metadata_log::seed_if_unseeded() {
  metadata_entry seed;
  try {
    if (store_.log_seeded()) return;
    seed.changes = store_.records();
  } catch (const std::exception& e) {
    log(log_level::error, "metadata", std::string("cannot seed the metadata log: ") + e.what());
    return;
  }
  seed.seed = true;
  auto records = seed.changes.size();
  auto noted = [records](const std::string& error, uint64_t index) {
    if (error.empty())
      log(log_level::info, "metadata",
          "metadata log seeded at index " + std::to_string(index) + " with " +
              std::to_string(records) + " record(s)");
    else
      log(log_level::warn, "metadata", "the metadata log's seed failed: " + error);
  };
  auto* p = new proposal{this, std::move(seed), std::move(noted), {}};
  p->arrived = uv_now(&loop_);
  waiting_.push_front(p);
}

// Followers learn that an entry committed from the next message the leader sends them, which
// without one would be a heartbeat up to two heartbeat intervals away (libraft 0.15): a member
// that forwarded a change, and answers it once it applied it, would wait that long. An empty
// entry right after a commit carries the commit to them at once; one at a time, however many
// commits it covers.
void metadata_log::send_commit_notice() {
  if (!notice_due_ || notice_in_flight_ || raft_state(&raft_) != RAFT_LEADER) return;
  notice_due_ = false;
  auto* b = new barrier{this, raft_.current_term, {}};
  b->req.data = b;
  auto done = [](struct raft_barrier* req, int) {
    auto* notice = static_cast<barrier*>(req->data);
    notice->log->notice_in_flight_ = false;
    delete notice;
  };
  if (raft_barrier(&raft_, &b->req, done) != 0) {
    delete b;
    return;
  }
  notice_in_flight_ = true;
}

}  // namespace warren::persistence
