// Several members' metadata logs in one process (persistence/metadata_log.hpp): real raft_uv
// logs in real folders and real LMDB stores, raft's messages carried as frames
// (metadata_link) by a small in-process network that can cut members off, as the cluster link
// will. One leader takes changes; every member applies them in the same order; a member cut
// off from the majority refuses changes with "no quorum", and a new member catches up.
#include <boost/test/unit_test.hpp>

#include "metadata_users.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"
#include "subprocess.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using warren::persistence::lmdb_store;
using warren::persistence::meta_mutation;
using warren::persistence::meta_table;
using warren::persistence::metadata_log;
using warren::persistence::raft_frame;
using warren::test::user;
using warren::test::users_of;

namespace {

using namespace std::chrono_literals;

// Routes frames between members by address; a cut pair drops them both ways.
class network {
 public:
  void attach(const std::string& address, metadata_log* log) {
    std::lock_guard<std::mutex> guard(mutex_);
    logs_[address] = log;
  }
  void detach(const std::string& address) { attach(address, nullptr); }

  // receive() only queues the frame: it is called under the lock, so that a member detached
  // (and then destroyed) is never handed one.
  bool send(const std::string& from, const std::string& to, raft_frame frame) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (cut_.count({from, to}) != 0) return false;
    auto found = logs_.find(to);
    if (found == logs_.end() || found->second == nullptr) return false;
    found->second->receive(std::move(frame));
    return true;
  }

  // Cuts `address` off from every other member, as a partition would.
  void isolate(const std::string& address) {
    std::vector<std::pair<std::string, metadata_log*>> others;
    metadata_log* self = nullptr;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      for (auto& [other, log] : logs_) {
        if (other == address) {
          self = log;
          continue;
        }
        cut_.insert({address, other});
        cut_.insert({other, address});
        others.push_back({other, log});
      }
    }
    for (auto& [other, log] : others) {
      if (log != nullptr) log->member_lost(address);
      if (self != nullptr) self->member_lost(other);
    }
  }

  void heal() {
    std::lock_guard<std::mutex> guard(mutex_);
    cut_.clear();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, metadata_log*> logs_;
  std::set<std::pair<std::string, std::string>> cut_;
};

// One member: its folder, its LMDB store, its log.
struct member {
  warren::test::temp_dir dir;
  std::unique_ptr<lmdb_store> store;
  std::unique_ptr<metadata_log> log;
  std::string address;
};

// Blocks for one answer.
class answer_box {
 public:
  metadata_log::answer callback() {
    return [this](const std::string& error) {
      std::lock_guard<std::mutex> guard(mutex_);
      error_ = error;
      done_ = true;
      changed_.notify_all();
    };
  }
  std::string wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    BOOST_REQUIRE(changed_.wait_for(lock, 60s, [this] { return done_; }));
    return error_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  std::string error_;
};

std::string propose(metadata_log& log, std::vector<meta_mutation> batch) {
  answer_box box;
  log.propose(std::move(batch), box.callback());
  return box.wait();
}

template <typename Condition>
bool eventually(Condition condition) {
  for (int i = 0; i < 3000; ++i) {  // a liveness bound, not a speed claim
    if (condition()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return condition();
}

struct cluster {
  network net;
  std::vector<std::unique_ptr<member>> members;
  metadata_log::options base;
  // What a member's LMDB holds before its log starts (a node's records from before the log).
  std::function<void(lmdb_store&, uint64_t id)> prepare;

  explicit cluster(size_t founders, unsigned snapshot_threshold = 0,
                   std::function<void(lmdb_store&, uint64_t id)> before_start = {})
      : prepare(std::move(before_start)) {
    base.election_timeout_ms = 300;  // a busy two-core machine still keeps its leader
    base.quorum_timeout_ms = 1000;
    base.snapshot_threshold = snapshot_threshold;
    base.snapshot_trailing = snapshot_threshold / 2;
    for (size_t i = 1; i <= founders; ++i) base.founders.push_back({i, "m" + std::to_string(i)});
    for (size_t i = 1; i <= founders; ++i) start(i, false);
  }

  ~cluster() {
    for (auto& m : members) net.detach(m->address);
    for (auto& m : members) m->log.reset();
  }

  member& start(uint64_t id, bool joining) {
    auto m = std::make_unique<member>();
    m->address = "m" + std::to_string(id);
    m->store = std::make_unique<lmdb_store>(m->dir.path());
    if (prepare) prepare(*m->store, id);
    auto opts = base;
    opts.dir = m->dir.path() + "/raft";
    opts.id = id;
    opts.address = m->address;
    opts.joining = joining;
    opts.send = [this, from = m->address](const std::string& to, raft_frame f) {
      return net.send(from, to, std::move(f));
    };
    m->log = std::make_unique<metadata_log>(*m->store, opts);
    net.attach(m->address, m->log.get());
    members.push_back(std::move(m));
    return *members.back();
  }

  member* leader() {
    member* found = nullptr;
    eventually([&] {
      for (auto& m : members)
        if (m->log->current().leading) return (found = m.get()) != nullptr;
      return false;
    });
    BOOST_REQUIRE(found != nullptr);
    return found;
  }

  // Proposes through whoever leads, again if leadership moved meanwhile (the tests' changes are
  // puts and erases: applying one twice changes nothing).
  std::string propose_on_leader(const std::vector<meta_mutation>& batch) {
    std::string error;
    for (int attempt = 0; attempt < 20; ++attempt) {
      error = propose(*leader()->log, batch);
      if (error.rfind(metadata_log::not_leader, 0) != 0 && error.rfind("outcome unknown", 0) != 0)
        return error;
    }
    return error;
  }

  member* follower_of(member* lead) {
    for (auto& m : members)
      if (m.get() != lead) return m.get();
    return nullptr;
  }
};

// What made raft read from a wild address: an install-snapshot whose configuration length is
// 2^40 (raft_wire_check_test takes it apart).
std::string wild_snapshot() {
  std::string out;
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  put(5);   // install snapshot
  put(72);  // header bytes
  for (int i = 0; i < 4; ++i) put(1);
  put(1ull << 40);  // the configuration's length
  put(1);           // its first bytes: the format, then nothing sensible
  put(0);
  put(0);
  put(0);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metadata_log_cluster_suite)

BOOST_AUTO_TEST_CASE(every_member_applies_the_leaders_changes) {
  cluster c(3);
  std::set<std::string> expected;
  for (int i = 0; i < 40; ++i) {
    auto name = "u" + std::to_string(i);
    BOOST_TEST(c.propose_on_leader({user(name)}) == "");
    expected.insert(name);
  }
  BOOST_TEST(c.propose_on_leader(
                 {{meta_table::users, warren::persistence::user_key("u0"), "", true}}) == "");
  expected.erase("u0");
  for (auto& m : c.members)
    BOOST_TEST(eventually([&] { return users_of(*m->store) == expected; }), m->address);
  auto* lead = c.leader();
  auto view = lead->log->current();
  BOOST_TEST(view.voters.size() == 3u);
  BOOST_TEST(view.leader_address == lead->address);
}

BOOST_AUTO_TEST_CASE(a_follower_answers_with_the_leader_for_the_caller_to_forward) {
  cluster c(3);
  auto* lead = c.leader();
  auto* follower = c.follower_of(lead);
  BOOST_REQUIRE(eventually([&] { return follower->log->current().leader_id != 0; }));
  auto error = propose(*follower->log, {user("f")});
  auto now_leading = c.leader();  // the leader of the moment, should it have changed
  BOOST_TEST(
      (error == std::string(metadata_log::not_leader) + ": the leader is " + lead->address ||
       error == std::string(metadata_log::not_leader) + ": the leader is " + now_leading->address),
      error);
  BOOST_TEST(users_of(*follower->store).count("f") == 0u);
}

// The isolated leader steps down; the majority elects another and goes on; the cut-off member
// refuses changes, naming how many members it reaches, and after healing holds the majority's
// changes and none of its own refused ones.
BOOST_AUTO_TEST_CASE(a_member_cut_off_refuses_changes_and_the_majority_goes_on) {
  cluster c(3);
  BOOST_TEST(c.propose_on_leader({user("before")}) == "");
  auto* old = c.leader();
  c.net.isolate(old->address);
  BOOST_REQUIRE(eventually([&] {
    auto v = old->log->current();
    return !v.leading && v.leader_id == 0;
  }));
  auto refused = propose(*old->log, {user("minority")});
  BOOST_TEST(refused == "no quorum: 1 of 3 members reachable");

  member* next = nullptr;
  BOOST_REQUIRE(eventually([&] {
    for (auto& m : c.members)
      if (m.get() != old && m->log->current().leading) next = m.get();
    return next != nullptr;
  }));
  BOOST_TEST(c.propose_on_leader({user("majority")}) == "");

  c.net.heal();
  std::set<std::string> expected{"before", "majority"};
  for (auto& m : c.members)
    BOOST_TEST(eventually([&] { return users_of(*m->store) == expected; }), m->address);
}

// A new leader commits an entry of its own term at once, without waiting for a change: only
// then are the entries before it committed by Raft's rule (libraft 0.15 would count replicas).
BOOST_AUTO_TEST_CASE(a_new_leader_commits_an_entry_of_its_own_term_before_any_change) {
  cluster c(3);
  BOOST_TEST(c.propose_on_leader({user("before")}) == "");
  auto* old = c.leader();
  BOOST_REQUIRE(eventually([&] { return old->log->current().term_committed; }));
  auto applied_before = old->log->current().applied;
  c.net.isolate(old->address);
  member* next = nullptr;
  metadata_log::view seen;
  BOOST_REQUIRE(eventually([&] {
    for (auto& m : c.members) {
      if (m.get() == old) continue;
      auto v = m->log->current();
      if (v.leading && v.term_committed) {
        next = m.get();
        seen = v;
      }
    }
    return next != nullptr;
  }));
  BOOST_TEST(seen.term > old->log->current().term);
  BOOST_TEST(seen.applied > applied_before, "no entry was committed past the old leader's");
  // The third member applies up to the barrier too: the leader's commit reached it.
  for (auto& m : c.members)
    if (m.get() != old)
      BOOST_TEST(eventually([&] { return m->log->current().applied >= seen.applied; }), m->address);
  BOOST_TEST(users_of(*next->store).count("before") == 1u);
}

// The first leader seeds the log with what its LMDB held of the log's tables, which replaces
// what every member held: all end with the leader's users, and a later leader seeds nothing.
BOOST_AUTO_TEST_CASE(the_first_leader_seeds_the_log_and_every_member_takes_its_records) {
  cluster c(3, 0, [](lmdb_store& store, uint64_t id) {
    store.apply({user("shared"), user("only-on-m" + std::to_string(id))});
  });
  // Whichever member led when the barrier committed seeded (leadership may move before that).
  for (auto& m : c.members)
    BOOST_REQUIRE_MESSAGE(eventually([&] { return m->store->log_seeded(); }), m->address);
  auto expected = users_of(*c.members[0]->store);
  size_t own = 0;
  for (const auto& name : expected) own += name.rfind("only-on-", 0) == 0 ? 1 : 0;
  BOOST_TEST(expected.count("shared") == 1u);
  BOOST_TEST(own == 1u, "the seed holds one member's records");
  for (auto& m : c.members)
    BOOST_TEST(eventually([&] { return users_of(*m->store) == expected; }), m->address);
  auto* lead = c.leader();
  BOOST_TEST(c.propose_on_leader({user("after")}) == "");
  expected.insert("after");
  c.net.isolate(lead->address);
  member* next = nullptr;
  BOOST_REQUIRE(eventually([&] {
    for (auto& m : c.members)
      if (m.get() != lead && m->log->current().term_committed) next = m.get();
    return next != nullptr;
  }));
  BOOST_TEST(c.propose_on_leader({user("later")}) == "");
  expected.insert("later");
  c.net.heal();
  for (auto& m : c.members)
    BOOST_TEST(eventually([&] { return users_of(*m->store) == expected; }), m->address);
}

// A member that forwarded a change learns the entry's index from the leader, and hears once it
// has applied the entry itself: what a node waits for before it answers its client.
BOOST_AUTO_TEST_CASE(a_follower_hears_once_it_has_applied_an_entry_the_leader_committed) {
  cluster c(3);
  auto* lead = c.leader();
  auto* follower = c.follower_of(lead);
  std::promise<std::pair<std::string, uint64_t>> committed;
  lead->log->submit({{user("seen")}, {}}, [&](const std::string& error, uint64_t index) {
    committed.set_value({error, index});
  });
  auto [error, index] = committed.get_future().get();
  BOOST_REQUIRE_MESSAGE(error.empty(), error);
  BOOST_TEST(index > 0u);
  answer_box applied;
  follower->log->after_applied(index, applied.callback());
  BOOST_TEST(applied.wait() == "");
  BOOST_TEST(users_of(*follower->store).count("seen") == 1u);
  // An index already applied is answered at once.
  answer_box again;
  follower->log->after_applied(index, again.callback());
  BOOST_TEST(again.wait() == "");
}

// A member added to a running cluster receives what it missed (by snapshot: the log was
// truncated long before) and becomes a voter; added again, nothing changes; removed, three
// voters are left.
BOOST_AUTO_TEST_CASE(a_joining_member_catches_up_and_votes_until_removed) {
  cluster c(3, 8);
  std::set<std::string> expected;
  for (int i = 0; i < 40; ++i) {
    auto name = "j" + std::to_string(i);
    BOOST_TEST(c.propose_on_leader({user(name)}) == "");
    expected.insert(name);
  }
  auto& fresh = c.start(4, true);
  BOOST_TEST(users_of(*fresh.store).empty());
  BOOST_TEST(fresh.log->current().voters.empty());
  auto* lead = c.leader();
  answer_box added;
  lead->log->add_member({4, fresh.address}, added.callback());
  BOOST_TEST(added.wait() == "");
  BOOST_TEST(eventually([&] { return users_of(*fresh.store) == expected; }));
  BOOST_TEST(c.leader()->log->current().voters.size() == 4u);
  answer_box again;
  c.leader()->log->add_member({4, fresh.address}, again.callback());
  BOOST_TEST(again.wait() == "");

  answer_box removed;
  c.leader()->log->remove_member(4, removed.callback());
  BOOST_TEST(removed.wait() == "");
  BOOST_TEST(c.leader()->log->current().voters.size() == 3u);
  BOOST_TEST(c.propose_on_leader({user("after")}) == "");
}

// A peer that opens streams and writes garbage, or the frame that made raft read from a wild
// address, or frames for streams it never opened, costs those streams only: the member goes on
// taking and applying changes.
BOOST_AUTO_TEST_CASE(garbage_from_a_peer_costs_only_its_stream) {
  cluster c(3);
  for (auto& m : c.members) {
    m->log->receive({raft_frame::kind::data, "m9", 9, 77, true, "no stream"});
    m->log->receive({raft_frame::kind::open, "m9", 9, 1, true, {}});
    m->log->receive({raft_frame::kind::data, "m9", 9, 1, true, std::string(4096, '\xff')});
    m->log->receive({raft_frame::kind::open, "m9", 0, 2, true, {}});
    m->log->receive({raft_frame::kind::close, "m9", 9, 5, false, {}});
    m->log->receive({raft_frame::kind::open, "m9", 9, 3, true, {}});
    m->log->receive({raft_frame::kind::data, "m9", 9, 3, true, wild_snapshot()});
    m->log->receive({raft_frame::kind::open, "m9", 9, 4, true, {}});
    m->log->receive({raft_frame::kind::data, "m9", 9, 4, true,
                     std::string(warren::persistence::metadata_link::max_frame_bytes + 1, 'x')});
  }
  BOOST_TEST(c.propose_on_leader({user("still")}) == "");
  for (auto& m : c.members) {
    BOOST_TEST(eventually([&] { return users_of(*m->store).count("still") == 1; }), m->address);
    // The garbage stream, the wild snapshot's and the oversized frame's.
    BOOST_TEST(m->log->current().refused_streams == 3u, m->address);
  }
}

BOOST_AUTO_TEST_SUITE_END()
