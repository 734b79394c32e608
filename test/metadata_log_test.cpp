// The metadata log of one member on disk (persistence/metadata_log.hpp): raft_uv under a real
// folder, LMDB as its state machine. A proposal is answered once committed and applied; what
// was answered survives a reopen and a kill -9 of the process that proposed it.
#include <boost/test/unit_test.hpp>

#include "metadata_users.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"
#include "subprocess.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

using warren::persistence::lmdb_store;
using warren::persistence::meta_mutation;
using warren::persistence::meta_table;
using warren::persistence::metadata_log;
using warren::test::user;
using warren::test::users_of;

namespace {

// Waits for the answers of the proposals it counted.
struct answers {
  std::mutex mutex;
  std::condition_variable changed;
  size_t expected = 0, answered = 0;
  std::vector<std::string> errors;

  metadata_log::answer one() {
    std::lock_guard<std::mutex> guard(mutex);
    ++expected;
    return [this](const std::string& error) {
      std::lock_guard<std::mutex> guard(mutex);
      ++answered;
      if (!error.empty()) errors.push_back(error);
      changed.notify_all();
    };
  }

  bool all(std::chrono::seconds patience = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, patience, [this] { return answered == expected; });
  }
};

metadata_log::options in(const warren::test::temp_dir& dir) {
  metadata_log::options o;
  o.dir = dir.path() + "/raft";
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metadata_log_suite)

BOOST_AUTO_TEST_CASE(proposals_are_applied_in_order_and_kept_across_a_reopen) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  std::set<std::string> expected;
  uint64_t applied = 0;
  {
    metadata_log log(store, in(dir));
    answers a;
    for (int i = 0; i < 50; ++i) {
      expected.insert("u" + std::to_string(i));
      log.propose({user("u" + std::to_string(i))}, a.one());
    }
    // In log order: the erase comes after the put it undoes.
    log.propose({{meta_table::users, warren::persistence::user_key("u0"), "", true}}, a.one());
    expected.erase("u0");
    BOOST_REQUIRE(a.all());
    BOOST_TEST(a.errors.empty());
    BOOST_TEST(users_of(store) == expected);
    applied = store.applied_index();
    BOOST_TEST(applied >= 51u);
  }
  BOOST_TEST(std::filesystem::exists(dir.path() + "/raft"));
  // Reopened, raft gives the state machine its whole log again: nothing applies twice, and the
  // member leads again.
  metadata_log log(store, in(dir));
  answers a;
  log.propose({user("later")}, a.one());
  BOOST_REQUIRE(a.all());
  BOOST_TEST(a.errors.empty());
  expected.insert("later");
  BOOST_TEST(users_of(store) == expected);
  BOOST_TEST(store.applied_index() > applied);
}

// A proposal whose condition fails is committed without its changes, and its answer names the
// condition, for the proposer to say what was in the way ("user 'x' already exists").
BOOST_AUTO_TEST_CASE(a_proposal_whose_condition_fails_is_answered_with_a_conflict) {
  using warren::persistence::user_key;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  metadata_log log(store, in(dir));
  answers a;
  log.propose({user("x")}, a.one());
  log.propose_if(
      {{user("y")},
       {{meta_table::users, user_key("y"), false}, {meta_table::users, user_key("x"), false}}},
      a.one());
  BOOST_REQUIRE(a.all());
  BOOST_REQUIRE(a.errors.size() == 1u);
  BOOST_TEST(a.errors[0] == "conflict: condition 1 does not hold");
  BOOST_TEST((metadata_log::failed_condition(a.errors[0]) == std::optional<size_t>(1)));
  BOOST_TEST(!metadata_log::failed_condition("no quorum: 1 of 3 members reachable").has_value());
  BOOST_TEST(users_of(store) == std::set<std::string>{"x"});
}

// A change no member could store, or a condition no member could look up, is refused before the
// log takes it, named; nothing of it is applied, and the log goes on.
BOOST_AUTO_TEST_CASE(a_proposal_no_member_could_store_is_refused_before_the_log_takes_it) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  metadata_log log(store, in(dir));
  answers a;
  log.propose({user("kept-out"), {meta_table::vhosts, std::string(600, 'v'), "", true}}, a.one());
  log.propose_if({{user("also-out")}, {{meta_table::users, std::string(600, 'u'), true}}}, a.one());
  log.propose({user("after")}, a.one());
  BOOST_REQUIRE(a.all());
  BOOST_REQUIRE(a.errors.size() == 2u);
  for (const auto& error : a.errors) {
    BOOST_TEST(error.rfind(metadata_log::unstorable_change, 0) == 0u, error);
    BOOST_TEST(error.find("a key of 600 bytes") != std::string::npos, error);
  }
  BOOST_TEST(users_of(store) == std::set<std::string>{"after"});
}

// A log folder is made whole or not at all: what an interrupted creation left (DIR.new) is made
// again, and a start never finds a folder raft cannot open.
BOOST_AUTO_TEST_CASE(an_interrupted_creation_is_made_again) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  auto opts = in(dir);
  std::filesystem::create_directories(opts.dir + ".new");
  {
    std::FILE* f = std::fopen((opts.dir + ".new/metadata1").c_str(), "w");
    BOOST_REQUIRE(f != nullptr);
    std::fputs("half a file", f);
    std::fclose(f);
  }
  metadata_log log(store, opts);
  answers a;
  log.propose({user("whole")}, a.one());
  BOOST_REQUIRE(a.all());
  BOOST_TEST(a.errors.empty());
  BOOST_TEST(!std::filesystem::exists(opts.dir + ".new"));
  BOOST_TEST(std::filesystem::exists(opts.dir));
}

// raft_start gives the state machine the member's own last snapshot; LMDB, durable and further
// on, is not rolled back to it.
BOOST_AUTO_TEST_CASE(a_reopen_never_rolls_the_store_back_to_an_older_snapshot) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  auto opts = in(dir);
  opts.snapshot_threshold = 8;
  opts.snapshot_trailing = 2;
  uint64_t applied = 0;
  {
    metadata_log log(store, opts);
    answers a;
    for (int i = 0; i < 30; ++i) log.propose({user("s" + std::to_string(i))}, a.one());
    BOOST_REQUIRE(a.all());
    BOOST_TEST(a.errors.empty());
    applied = store.applied_index();
  }
  metadata_log log(store, opts);
  BOOST_TEST(store.applied_index() >= applied);
  BOOST_TEST(users_of(store).size() == 30u);
}

// A child process proposes and reports each answered change on a pipe; it is killed with
// SIGKILL in the middle; every change it was answered for is there after a reopen.
BOOST_AUTO_TEST_CASE(an_answered_change_survives_kill_9) {
  warren::test::temp_dir dir;
  int fds[2];
  BOOST_REQUIRE(pipe(fds) == 0);
  pid_t child = fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    try {
      lmdb_store store(dir.path());
      metadata_log log(store, in(dir));
      for (int i = 0;; ++i) {
        auto name = "k" + std::to_string(i);
        log.propose({user(name)}, [fd = fds[1], name](const std::string& error) {
          if (!error.empty()) return;
          auto line = name + "\n";
          if (write(fd, line.data(), line.size()) < 0) _exit(3);
        });
        if (i % 8 == 7) usleep(1000);
      }
    } catch (...) {
      _exit(2);
    }
  }
  close(fds[1]);
  std::set<std::string> answered;
  FILE* in_pipe = fdopen(fds[0], "r");
  char line[64];
  while (answered.size() < 300 && fgets(line, sizeof line, in_pipe) != nullptr)
    answered.insert(std::string(line, strcspn(line, "\n")));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  fclose(in_pipe);
  BOOST_REQUIRE(answered.size() == 300u);

  lmdb_store store(dir.path());
  metadata_log log(store, in(dir));
  auto users = users_of(store);
  for (const auto& name : answered) BOOST_TEST(users.count(name) == 1u, name);
}

BOOST_AUTO_TEST_SUITE_END()
