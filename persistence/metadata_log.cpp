#include "persistence/metadata_log.hpp"

#include "core/log.hpp"
#include "persistence/data_dir.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string_view>

namespace warren::persistence {

namespace {

namespace fs = std::filesystem;

void check(int rc, const std::string& what, struct raft* r = nullptr) {
  if (rc == 0) return;
  std::string detail = r != nullptr ? raft_errmsg(r) : "";
  throw std::runtime_error("metadata log: " + what + ": " + raft_strerror(rc) +
                           (detail.empty() ? "" : " (" + detail + ")"));
}

// Writes a founding member's first configuration into `dir` with a raft instance of its own,
// on a loop of its own, closed again before it returns.
void bootstrap_in(const std::string& dir, const metadata_log::options& o) {
  uv_loop_t loop;
  if (int rc = uv_loop_init(&loop); rc != 0)
    throw std::runtime_error(std::string("metadata log: uv loop: ") + uv_strerror(rc));
  metadata_link no_one(&loop, {});
  raft_io io{};
  raft_fsm fsm{};  // never called: nothing is applied while bootstrapping
  struct raft r {};
  int rc = raft_uv_init(&io, &loop, dir.c_str(), no_one.transport());
  if (rc != 0) {
    uv_loop_close(&loop);
    check(rc, "open " + dir + " (" + io.errmsg + ")");
  }
  rc = raft_init(&r, &io, &fsm, o.id, o.address.c_str());
  std::string detail = rc == 0 ? "" : io.errmsg;
  if (rc == 0) {
    raft_configuration conf;
    raft_configuration_init(&conf);
    auto founders = o.founders;
    if (founders.empty()) founders.push_back({o.id, o.address});
    for (const auto& m : founders)
      if (rc == 0) rc = raft_configuration_add(&conf, m.id, m.address.c_str(), RAFT_VOTER);
    if (rc == 0) rc = raft_bootstrap(&r, &conf);
    if (rc != 0) detail = raft_errmsg(&r);
    raft_configuration_close(&conf);
    r.data = &io;
    raft_close(&r, [](struct raft* closed) { raft_uv_close(static_cast<raft_io*>(closed->data)); });
  } else {
    raft_uv_close(&io);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  check(rc, "bootstrap in " + dir + (detail.empty() ? "" : " (" + detail + ")"));
}

// A new log folder appears whole: it is made as DIR.new (bootstrapped there for a founding
// member), synced, and renamed, so that a power cut while it is made leaves no folder and the
// next start makes it again, rather than a folder raft cannot open. DIR.new is only ever a
// folder this made and did not finish.
void make_fresh_log(const metadata_log::options& o) {
  std::string temp = o.dir + ".new";
  std::error_code ec;
  fs::remove_all(temp, ec);
  if (!ec) fs::create_directories(temp, ec);
  if (ec) throw std::runtime_error("metadata log: cannot create " + temp + ": " + ec.message());
  if (!o.joining) bootstrap_in(temp, o);
  sync_directory(temp);
  fs::rename(temp, o.dir, ec);
  if (ec) throw std::runtime_error("metadata log: cannot rename " + temp + ": " + ec.message());
  sync_directory(fs::absolute(o.dir).lexically_normal().parent_path().string());
}

}  // namespace

metadata_log::metadata_log(lmdb_store& store, options opts)
    : store_(store), opts_(std::move(opts)), fsm_(store) {
  fsm_.on_change(opts_.on_change);
  if (!fs::exists(opts_.dir)) make_fresh_log(opts_);
  std::promise<void> started;
  auto ready = started.get_future();
  thread_ = std::thread([this, &started] { run(started); });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

metadata_log::~metadata_log() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
    uv_async_send(&wake_);
  }
  thread_.join();
}

void metadata_log::propose(std::vector<meta_mutation> batch, answer done) {
  propose_if({std::move(batch), {}}, std::move(done));
}

void metadata_log::propose_if(metadata_entry entry, answer done) {
  submit(std::move(entry),
         [done = std::move(done)](const std::string& error, uint64_t) { done(error); });
}

void metadata_log::submit(metadata_entry entry, indexed_answer done) {
  // What no member could store is refused here, named, rather than committed and skipped by
  // every member's state machine (which still checks, against a hostile peer's entries).
  if (auto problem = unstorable(entry); !problem.empty())
    return done(std::string(unstorable_change) + ": " + problem, 0);
  auto* p = new proposal{this, std::move(entry), std::move(done), {}};
  {
    // The wake-up is sent under the mutex: the loop closes wake_ only once it has seen
    // stopping_ under it, so no sender can reach a closed handle.
    std::lock_guard<std::mutex> guard(mutex_);
    if (!stopping_) {
      incoming_.push_back(p);
      uv_async_send(&wake_);
      return;
    }
  }
  p->done("the metadata log is closing", 0);
  delete p;
}

void metadata_log::after_applied(uint64_t index, answer then) {
  auto shared = std::make_shared<answer>(std::move(then));
  if (!run_on_loop([this, index, shared] {
        after_applied_.emplace(index, std::move(*shared));
        // A member that never applies (a joiner the leader never added) must not gather waiters
        // without end: past the bound, the furthest off is told, and its asker has long gone.
        if (after_applied_.size() > max_apply_waiters) {
          auto furthest = std::prev(after_applied_.end());
          auto dropped = std::move(furthest->second);
          after_applied_.erase(furthest);
          dropped("too many changes wait for this member's log to apply them");
        }
        run_applied_waiters();
      }))
    (*shared)("the metadata log is closing");
}

void metadata_log::run_applied_waiters() {
  auto applied = fsm_.applied_durably();
  while (!after_applied_.empty() && after_applied_.begin()->first <= applied) {
    auto then = std::move(after_applied_.begin()->second);
    after_applied_.erase(after_applied_.begin());
    then("");
  }
}

// The log thread: set up, then the loop until shut_down() has closed every handle.
void metadata_log::run(std::promise<void>& started) {
  // raft learns that a stream ended when its write fails with EPIPE; the signal that comes with
  // it stays blocked on this thread rather than killing a process that did not ignore it.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  try {
    open(started);
  } catch (...) {
    uv_loop_close(&loop_);
    started.set_exception(std::current_exception());
    return;
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void metadata_log::open(std::promise<void>& started) {
  if (int rc = uv_loop_init(&loop_); rc != 0)
    throw std::runtime_error(std::string("metadata log: uv loop: ") + uv_strerror(rc));
  wake_.data = this;
  uv_async_init(&loop_, &wake_, [](uv_async_t* h) {
    auto* self = static_cast<metadata_log*>(h->data);
    self->take_incoming();
  });
  retry_.data = this;
  uv_timer_init(&loop_, &retry_);
  publish_.data = this;
  uv_timer_init(&loop_, &publish_);
  lead_check_.data = this;
  uv_check_init(&loop_, &lead_check_);
  link_ = std::make_unique<metadata_link>(&loop_, opts_.send);
  auto fail = [this](const std::string& what, int rc, struct raft* r) {
    uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&retry_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&publish_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&lead_check_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    check(rc, what, r);
  };
  if (int rc = raft_uv_init(&io_, &loop_, opts_.dir.c_str(), link_->transport()); rc != 0)
    fail("open " + opts_.dir + " (" + io_.errmsg + ")", rc, nullptr);
  // A damaged segment stops the start, named, rather than being moved aside silently: entries
  // this member acknowledged may be in it.
  raft_uv_set_auto_recovery(&io_, false);
  if (int rc = raft_init(&raft_, &io_, fsm_.fsm(), opts_.id, opts_.address.c_str()); rc != 0) {
    raft_uv_close(&io_);
    fail("init", rc, nullptr);
  }
  fsm_.attach(&raft_);
  fsm_.group_commits(true);
  raft_.data = this;
  raft_set_election_timeout(&raft_, opts_.election_timeout_ms);
  raft_set_heartbeat_timeout(&raft_, std::max(1u, opts_.election_timeout_ms / 10));
  // A member cut off and back must not depose a leader that kept its majority: it asks first.
  raft_set_pre_vote(&raft_, true);
  raft_uv_set_connect_retry_delay(&io_, opts_.election_timeout_ms);
  if (opts_.snapshot_threshold != 0) raft_set_snapshot_threshold(&raft_, opts_.snapshot_threshold);
  if (opts_.snapshot_trailing != 0) raft_set_snapshot_trailing(&raft_, opts_.snapshot_trailing);
  int rc = raft_start(&raft_);
  if (rc != 0) {
    std::string detail = raft_errmsg(&raft_);
    raft_close(&raft_, &metadata_log::on_raft_closed);
    fail("start in " + opts_.dir + (detail.empty() ? std::string() : " (" + detail + ")"), rc,
         nullptr);
  }
  publish_view();
  uv_timer_start(
      &publish_, [](uv_timer_t* t) { static_cast<metadata_log*>(t->data)->publish_view(); },
      view_interval_ms, view_interval_ms);
  // raft becomes leader inside its own callbacks (a vote counted, an election timer); the check
  // after each iteration of the loop sees it before the next one reads any reply.
  uv_check_start(&lead_check_, [](uv_check_t* h) {
    auto* self = static_cast<metadata_log*>(h->data);
    // A new leader's seed reads LMDB: not while it lacks entries applied.
    if (self->write_applied()) self->commit_own_term();
    self->send_commit_notice();
    self->run_applied_waiters();
  });
  started.set_value();
}

bool metadata_log::run_on_loop(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
    uv_async_send(&wake_);
  }
  return true;
}

void metadata_log::receive(raft_frame frame) {
  run_on_loop([this, f = std::move(frame)]() mutable { link_->receive(std::move(f)); });
}

void metadata_log::member_lost(std::string address) {
  run_on_loop([this, a = std::move(address)] { link_->member_lost(a); });
}

metadata_log::view metadata_log::make_view() {
  view v;
  // The leader raft names counts only while heard from: a leader killed is still named until
  // an election, which makes a stale answer.
  v.leading = raft_state(&raft_) == RAFT_LEADER;
  v.leader_address = v.leading ? opts_.address : leader_heard_from();
  if (!v.leader_address.empty()) {
    const char* address = nullptr;
    raft_id leader = 0;
    raft_leader(&raft_, &leader, &address);
    v.leader_id = leader;
  }
  v.term = raft_.current_term;
  v.applied = fsm_.applied_durably();
  v.term_committed = v.leading && committed_term_ == raft_.current_term;
  v.refused_streams = link_->refused_streams();
  for (unsigned i = 0; i < raft_.configuration.n; ++i) {
    const auto& s = raft_.configuration.servers[i];
    (s.role == RAFT_VOTER ? v.voters : v.others).push_back({s.id, s.address});
  }
  return v;
}

void metadata_log::publish_view() {
  auto v = make_view();
  if (!term_noted_ && v.term > 0 && opts_.on_first_term) {
    term_noted_ = true;
    opts_.on_first_term();
  }
  std::lock_guard<std::mutex> guard(view_mutex_);
  latest_ = std::move(v);
}

metadata_log::view metadata_log::current() {
  std::promise<view> answer;
  auto ready = answer.get_future();
  if (!run_on_loop([this, &answer] { answer.set_value(make_view()); })) return {};
  return ready.get();
}

metadata_log::view metadata_log::latest() {
  std::lock_guard<std::mutex> guard(view_mutex_);
  return latest_;
}

void metadata_log::add_member(member m, answer done) {
  auto* c = new member_change{this, true, std::move(m), std::move(done), {}, false};
  if (!run_on_loop([this, c] { change_members(c); })) {
    c->done("the metadata log is closing");
    delete c;
  }
}

void metadata_log::remove_member(uint64_t id, answer done) {
  auto* c = new member_change{this, false, {id, {}}, std::move(done), {}, false};
  if (!run_on_loop([this, c] { change_members(c); })) {
    c->done("the metadata log is closing");
    delete c;
  }
}

// Membership changes are the leader's: elsewhere they are refused at once, naming the leader.
void metadata_log::change_members(member_change* c) {
  if (raft_state(&raft_) != RAFT_LEADER) {
    c->done(why_not_leading());
    delete c;
    return;
  }
  c->req.data = c;
  // A member added before without becoming a voter (its catch-up failed) is made one now.
  const raft_server* known = nullptr;
  for (unsigned i = 0; i < raft_.configuration.n; ++i)
    if (raft_.configuration.servers[i].id == c->who.id) known = &raft_.configuration.servers[i];
  if (c->add && known != nullptr) {
    if (known->role == RAFT_VOTER) {
      c->done("");
      delete c;
      return;
    }
    c->assigned = true;
  }
  int rc = c->add && c->assigned ? raft_assign(&raft_, &c->req, c->who.id, RAFT_VOTER,
                                               &metadata_log::on_member_changed)
           : c->add              ? raft_add(&raft_, &c->req, c->who.id, c->who.address.c_str(),
                                            &metadata_log::on_member_changed)
                    : raft_remove(&raft_, &c->req, c->who.id, &metadata_log::on_member_changed);
  if (rc != 0) refused_change(c, rc);
}

// A change raft refused. raft_assign can fail after taking the request as the leader's pending
// change: raft answers it later (on a step-down), so it is kept until then.
void metadata_log::refused_change(member_change* c, int rc) {
  if (raft_state(&raft_) == RAFT_LEADER && raft_.leader_state.change == &c->req) return;
  c->done(std::string("membership change refused: ") + raft_strerror(rc) + " (" +
          raft_errmsg(&raft_) + ")");
  delete c;
}

// An add is two changes: the member joins as a spare, then is made a voter, which raft does
// once it has caught up with the log. The second starts from the loop, not from raft's callback.
void metadata_log::on_member_changed(struct raft_change* req, int status) {
  auto* c = static_cast<member_change*>(req->data);
  auto* self = c->log;
  if (status == 0 && c->add && !c->assigned) {
    c->assigned = true;
    self->assigning_.push_back(c);
    uv_async_send(&self->wake_);
    return;
  }
  // A change whose leader stepped down or closed may still be committed by the next one.
  c->done(status == 0 ? std::string()
                      : std::string("outcome unknown: ") + raft_strerror(status) +
                            " before the membership change was committed");
  delete c;
}

void metadata_log::take_incoming() {
  bool stop = false;
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto* p : incoming_) {
      p->arrived = uv_now(&loop_);
      waiting_.push_back(p);
    }
    incoming_.clear();
    tasks.swap(tasks_);
    stop = stopping_;
  }
  for (auto& task : tasks) task();
  if (stop) return shut_down();
  assign_voters();
  submit_waiting();
  publish_view();
}

void metadata_log::assign_voters() {
  auto due = std::move(assigning_);
  assigning_.clear();
  for (auto* c : due) {
    int rc = raft_assign(&raft_, &c->req, c->who.id, RAFT_VOTER, &metadata_log::on_member_changed);
    if (rc != 0) refused_change(c, rc);
  }
}

// Answers `done` when this member cannot take a change: another member leads (the answer names
// it, for the caller to forward), or none has since `arrived` plus the quorum timeout. False
// while waiting for a leader is still worth it.
bool metadata_log::refuse_unless_leading(const indexed_answer& done, uint64_t arrived) {
  bool elsewhere = !leader_heard_from().empty();
  if (!elsewhere && uv_now(&loop_) - arrived < opts_.quorum_timeout_ms) return false;
  done(why_not_leading(), 0);
  return true;
}

std::string metadata_log::why_not_leading() const {
  auto leader = leader_heard_from();
  if (!leader.empty()) return std::string(not_leader) + ": the leader is " + leader;
  return no_quorum();
}

// The leader raft names, when it is another member this one heard from lately: a member cut
// off, or removed (raft then never starts an election), keeps naming a leader it lost.
std::string metadata_log::leader_heard_from() const {
  raft_id leader = 0;
  const char* address = nullptr;
  raft_leader(const_cast<struct raft*>(&raft_), &leader, &address);
  if (leader == 0 || leader == opts_.id || address == nullptr) return {};
  auto heard = link_->heard_from(3ull * opts_.election_timeout_ms);
  if (std::find(heard.begin(), heard.end(), std::string(address)) == heard.end()) return {};
  return address;
}

// "no quorum: k of n members reachable": the voters this member heard from lately, itself
// included when it votes.
std::string metadata_log::no_quorum() const {
  auto heard = link_->heard_from(3ull * opts_.election_timeout_ms);
  unsigned voters = 0, reachable = 0;
  for (unsigned i = 0; i < raft_.configuration.n; ++i) {
    const auto& s = raft_.configuration.servers[i];
    if (s.role != RAFT_VOTER) continue;
    ++voters;
    if (s.id == opts_.id ||
        std::find(heard.begin(), heard.end(), std::string(s.address)) != heard.end())
      ++reachable;
  }
  if (voters == 0) return "no quorum: this member is not in the cluster's configuration yet";
  return "no quorum: " + std::to_string(reachable) + " of " + std::to_string(voters) +
         " members reachable";
}

// Proposals go to raft when this member leads; on a member that does not, they are answered
// with the leader or, with none for the quorum timeout, refused.
void metadata_log::submit_waiting() {
  while (!waiting_.empty()) {
    auto* p = waiting_.front();
    bool leading = raft_state(&raft_) == RAFT_LEADER;
    // A new leader takes changes once its barrier (and the seed it may have put first) is in.
    if (leading && committed_term_ != raft_.current_term) {
      if (uv_now(&loop_) - p->arrived < opts_.quorum_timeout_ms) break;
      waiting_.pop_front();
      p->done("no quorum: this member leads, but its first entry was not committed within " +
                  std::to_string(opts_.quorum_timeout_ms) + " ms",
              0);
      delete p;
      continue;
    }
    if (!leading) {
      if (refuse_unless_leading(p->done, p->arrived)) {
        waiting_.pop_front();
        delete p;
        continue;
      }
      break;
    }
    auto bytes = encode_metadata_entry(p->entry);
    raft_buffer buf;
    buf.len = bytes.size();
    buf.base = raft_malloc(bytes.size());  // raft owns it once raft_apply takes it
    if (buf.base == nullptr) break;        // tried again by the retry timer
    std::memcpy(buf.base, bytes.data(), bytes.size());
    p->req.data = p;
    int rc = raft_apply(&raft_, &p->req, &buf, 1, &metadata_log::on_applied);
    if (rc == RAFT_NOTLEADER) {
      raft_free(buf.base);
      break;  // leadership lost, or being transferred: tried again by the retry timer
    }
    waiting_.pop_front();
    if (rc != 0) {
      raft_free(buf.base);
      p->done(std::string("refused by raft: ") + raft_strerror(rc), 0);
      delete p;
    }
  }
  if (!waiting_.empty())
    uv_timer_start(
        &retry_, [](uv_timer_t* t) { static_cast<metadata_log*>(t->data)->submit_waiting(); }, 10,
        0);
}

std::string metadata_log::unstorable(const metadata_entry& entry) {
  for (const auto& m : entry.changes)
    if (auto problem = lmdb_store::change_problem(m); !problem.empty()) return problem;
  for (const auto& c : entry.conditions)
    if (auto problem = lmdb_store::condition_problem(c); !problem.empty())
      return "a condition on " + problem;
  return {};
}

std::optional<size_t> metadata_log::failed_condition(const std::string& error) {
  std::string_view prefix = conflict;
  if (error.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  size_t at = 0;
  auto digits = std::string_view(error).substr(prefix.size());
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), at);
  if (ec != std::errc() || end == digits.data()) return std::nullopt;
  return at;
}

void metadata_log::shut_down() {
  write_applied();
  for (auto& [index, p] : answer_when_written_) {
    p->done("outcome unknown: the change is committed as log entry " + std::to_string(index) +
                ", but the metadata log closed before this member stored it; it is applied "
                "when the node starts again",
            0);
    delete p;
  }
  answer_when_written_.clear();
  for (auto* c : assigning_) {
    c->done("the metadata log is closing");
    delete c;
  }
  assigning_.clear();
  for (auto* p : waiting_) {
    p->done("the metadata log is closing", 0);
    delete p;
  }
  waiting_.clear();
  for (auto& [index, then] : after_applied_) then("the metadata log is closing");
  after_applied_.clear();
  uv_timer_stop(&retry_);
  uv_timer_stop(&publish_);
  uv_check_stop(&lead_check_);
  uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&lead_check_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&retry_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&publish_), nullptr);
  // raft answers the proposals it holds (an error status), then io_ can be released.
  raft_close(&raft_, &metadata_log::on_raft_closed);
}

void metadata_log::on_raft_closed(struct raft* r) {
  raft_uv_close(&static_cast<metadata_log*>(r->data)->io_);
}

}  // namespace warren::persistence
