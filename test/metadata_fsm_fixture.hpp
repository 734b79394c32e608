// The fixture of the metadata state machine's tests (metadata_fsm_test.cpp,
// metadata_fsm_grouped_test.cpp): members on real LMDB stores, driven by libraft's own test
// fixture (in-memory network and disks, simulated time).
#pragma once

#include <boost/test/unit_test.hpp>

#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_fsm.hpp"
#include "persistence/metadata_log_codec.hpp"
#include "subprocess.hpp"

extern "C" {
#include <raft/fixture.h>
}

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace warren::test::fsm {

using warren::persistence::lmdb_store;
using warren::persistence::meta_mutation;
using warren::persistence::meta_table;
using warren::persistence::metadata_fsm;

inline meta_mutation user(const std::string& name) {
  return {meta_table::users, warren::persistence::user_key(name),
          warren::persistence::encode_user({name, "hash-of-" + name, {}}), false};
}

inline meta_mutation user_with_hash(const std::string& name, const std::string& hash) {
  return {meta_table::users, warren::persistence::user_key(name),
          warren::persistence::encode_user({name, hash, {}}), false};
}

// The password hash of user `name` in `store`, "" when there is no such user.
inline std::string hash_of(lmdb_store& store, const std::string& name) {
  for (const auto& u : store.load().users)
    if (u.name == name) return u.password_hash;
  return {};
}

inline std::vector<std::string> users_of(lmdb_store& store) {
  std::vector<std::string> out;
  for (const auto& u : store.load().users) out.push_back(u.name);
  return out;
}

// One member: its LMDB (in a folder of its own, or at `at`) and the state machine on it.
struct member {
  explicit member(const std::string& at = {}) : store(at.empty() ? dir.path() : at) {}
  warren::test::temp_dir dir;
  lmdb_store store;
  metadata_fsm fsm{store};
};

// libraft's fixture with `n` bootstrapped voters, started.
struct cluster {
  raft_fixture f;
  std::vector<std::unique_ptr<member>> members;

  // `grouped`: each member's state machine groups its commits (metadata_fsm::group_commits),
  // written when the test says.
  // `dirs`: where the members' LMDB lives, when not in folders of their own.
  explicit cluster(unsigned n, bool grouped = false, const std::vector<std::string>& dirs = {}) {
    std::memset(&f, 0, sizeof f);  // the fixture expects zeroed memory
    BOOST_REQUIRE(raft_fixture_initialize(&f) == 0);
    for (unsigned i = 0; i < n; ++i) {
      members.push_back(std::make_unique<member>(i < dirs.size() ? dirs[i] : std::string()));
      BOOST_REQUIRE(raft_fixture_grow(&f, members.back()->fsm.fsm()) == 0);
      members.back()->fsm.attach(raft_fixture_get(&f, i));
      members.back()->fsm.group_commits(grouped);
    }
    raft_configuration conf;
    BOOST_REQUIRE(raft_fixture_configuration(&f, n, &conf) == 0);
    BOOST_REQUIRE(raft_fixture_bootstrap(&f, &conf) == 0);
    raft_configuration_close(&conf);
    BOOST_REQUIRE(raft_fixture_start(&f) == 0);
  }
  ~cluster() { raft_fixture_close(&f); }

  raft* server(unsigned i) { return raft_fixture_get(&f, i); }

  unsigned leader() {
    BOOST_REQUIRE(raft_fixture_step_until_has_leader(&f, 10000));
    return raft_fixture_leader_index(&f);
  }

  // The leader among `candidates`, after stepping long enough for an election.
  unsigned leader_among(const std::vector<unsigned>& candidates) {
    for (int round = 0; round < 50; ++round) {
      for (auto i : candidates)
        if (raft_state(server(i)) == RAFT_LEADER) return i;
      raft_fixture_step_until_elapsed(&f, 200);
    }
    BOOST_FAIL("no leader among the candidates");
    return 0;
  }

  // Proposes `batch` on member `i`; the entry's index, or 0 when refused at once.
  raft_index propose(unsigned i, const std::vector<meta_mutation>& batch,
                     const std::vector<warren::persistence::meta_condition>& conditions = {}) {
    auto bytes = warren::persistence::encode_metadata_entry({batch, conditions});
    raft_buffer buf;
    buf.len = bytes.size();
    buf.base = raft_malloc(bytes.size());  // raft owns it from here
    std::memcpy(buf.base, bytes.data(), bytes.size());
    auto* req = new struct raft_apply;
    auto index = raft_last_index(server(i)) + 1;
    int rc =
        raft_apply(server(i), req, &buf, 1, [](struct raft_apply* r, int, void*) { delete r; });
    if (rc != 0) {
      raft_free(buf.base);
      delete req;
      return 0;
    }
    return index;
  }

  void partition(unsigned i) {
    for (unsigned j = 0; j < members.size(); ++j)
      if (j != i) {
        raft_fixture_saturate(&f, i, j);
        raft_fixture_saturate(&f, j, i);
      }
  }

  void heal(unsigned i) {
    for (unsigned j = 0; j < members.size(); ++j)
      if (j != i) {
        raft_fixture_desaturate(&f, i, j);
        raft_fixture_desaturate(&f, j, i);
      }
  }

  // Grouped: every member writes what it applied.
  void write_applied() {
    for (auto& m : members) BOOST_REQUIRE(m->fsm.write_applied());
  }

  bool applied(unsigned i, raft_index index) {
    return raft_fixture_step_until_applied(&f, i, index, 20000);
  }
};

}  // namespace warren::test::fsm
