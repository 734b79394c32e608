// Grouped commits of the metadata state machine (persistence/metadata_fsm.hpp): the entries raft
// applies are kept until written together, in one LMDB transaction per group, and nothing is
// told of them before; a failed write keeps them.
#include "metadata_fsm_fixture.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace warren::test::fsm;
using applied = lmdb_store::entry_applied;

BOOST_AUTO_TEST_SUITE(metadata_fsm_grouped_suite)

// Grouped commits: what raft applied is in LMDB only once written, all of it in one go, with
// each entry's conditions judged after the changes of the entries before it; the change
// listener hears of it then, in log order, and the outcomes say which entry was refused.
BOOST_AUTO_TEST_CASE(grouped_entries_are_stored_and_told_only_once_written) {
  using warren::persistence::user_key;
  cluster c(3, true);
  auto leader = c.leader();
  auto& m = *c.members[leader];
  BOOST_REQUIRE(m.fsm.write_applied());  // what the election applied
  m.fsm.take_written();
  std::vector<std::string> heard;
  m.fsm.on_change([&](const std::vector<meta_mutation>& changes, bool) {
    for (const auto& ch : changes) heard.push_back(ch.key);
  });
  auto before = m.store.applied_index();
  std::vector<warren::persistence::meta_condition> x_absent{
      {meta_table::users, user_key("x"), false}};
  auto first = c.propose(leader, {user_with_hash("x", "first")}, x_absent);
  auto second = c.propose(leader, {user_with_hash("x", "second")}, x_absent);
  auto third = c.propose(leader, {user("y")}, {{meta_table::users, user_key("x"), true}});
  BOOST_REQUIRE(third != 0u);
  BOOST_REQUIRE(c.applied(leader, third));
  BOOST_TEST(m.store.applied_index() == before, "applied entries were stored before written");
  BOOST_TEST(users_of(m.store).empty());
  BOOST_TEST(heard.empty());
  BOOST_TEST(m.fsm.applied_durably() < first);

  BOOST_REQUIRE(m.fsm.write_applied());
  BOOST_TEST(m.store.applied_index() == third);
  BOOST_TEST(m.fsm.applied_durably() == third);
  BOOST_TEST(hash_of(m.store, "x") == "first");
  BOOST_TEST((users_of(m.store) == std::vector<std::string>{"x", "y"}));
  BOOST_TEST((heard == std::vector<std::string>{user_key("x"), user_key("y")}));
  auto written = m.fsm.take_written();
  BOOST_REQUIRE(written.size() == 3u);
  BOOST_TEST(written[0].first == first);
  BOOST_TEST(!written[0].second.refused);
  BOOST_TEST(written[1].first == second);
  BOOST_TEST(written[1].second.refused);
  BOOST_TEST(written[1].second.failed_condition == 0u);
  BOOST_TEST(written[2].first == third);
  BOOST_TEST(!written[2].second.refused);
  BOOST_TEST(m.fsm.take_written().empty());
}

// A member that applied more entries than one group holds (one catching up) writes them all,
// group after group, with an outcome for each.
BOOST_AUTO_TEST_CASE(many_entries_applied_at_once_are_written_in_groups) {
  cluster c(1, true);
  c.leader();
  BOOST_REQUIRE(c.members[0]->fsm.write_applied());
  c.members[0]->fsm.take_written();
  auto count = metadata_fsm::max_group * 2 + 10;
  raft_index last = 0;
  for (size_t i = 0; i < count; ++i) {
    last = c.propose(0, {user("user-" + std::to_string(10000 + i))});
    BOOST_REQUIRE(last != 0u);
  }
  BOOST_REQUIRE(c.applied(0, last));
  BOOST_TEST(c.members[0]->fsm.applied_durably() < last);
  BOOST_REQUIRE(c.members[0]->fsm.write_applied());
  BOOST_TEST(c.members[0]->fsm.applied_durably() == last);
  BOOST_TEST(c.members[0]->store.applied_index() == last);
  BOOST_TEST(users_of(c.members[0]->store).size() == count);
  auto written = c.members[0]->fsm.take_written();
  BOOST_REQUIRE(written.size() == count);
  BOOST_TEST(written.back().first == last);
}

// Grouped, on a disk that fills up (a small tmpfs, mounted: needs root, as CI and the
// development machines have): entries whose write fails are kept, and nothing is told of them,
// while raft goes on applying; once there is room, the next write stores them all, with their
// outcomes, and the change listener hears of them in log order.
BOOST_AUTO_TEST_CASE(grouped_entries_whose_write_fails_are_kept_until_there_is_room) {
  warren::test::tmpfs_mount mount_point("4m");
  auto at = mount_point.path() + "/meta";
  std::filesystem::create_directories(at);
  cluster c(1, true, {at});
  c.leader();
  auto& m = *c.members[0];
  BOOST_REQUIRE(m.fsm.write_applied());
  m.fsm.take_written();
  std::vector<std::string> heard;
  m.fsm.on_change([&](const std::vector<meta_mutation>& changes, bool) {
    for (const auto& ch : changes) heard.push_back(ch.key);
  });
  // Every free block of the mount, in a file given back later.
  auto ballast = mount_point.path() + "/ballast";
  {
    std::ofstream out(ballast, std::ios::binary);
    std::string chunk(16 * 1024, 'b');
    while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size())) && out.flush()) {
    }
  }
  auto before = m.store.applied_index();
  std::vector<std::string> names;
  raft_index first = 0, last = 0;
  for (int i = 0; i < 64; ++i) {
    names.push_back("big-" + std::to_string(100 + i));
    last = c.propose(0, {user_with_hash(names.back(), std::string(8192, 'h'))});
    BOOST_REQUIRE(last != 0u);
    if (first == 0) first = last;
  }
  BOOST_REQUIRE(c.applied(0, last));
  BOOST_TEST(!m.fsm.write_applied(), "64 entries of 8 KiB were written to a full disk");
  BOOST_TEST(!m.fsm.write_applied());  // and again, as every loop iteration tries
  BOOST_TEST(m.fsm.applied_durably() == first - 1);
  BOOST_TEST(m.store.applied_index() == before);
  BOOST_TEST(heard.empty());
  BOOST_TEST(m.fsm.take_written().empty());
  // Raft goes on applying meanwhile: kept too.
  auto more = c.propose(0, {user("after-the-failure")});
  BOOST_REQUIRE(more != 0u);
  BOOST_REQUIRE(c.applied(0, more));
  BOOST_TEST(m.fsm.applied_durably() == first - 1);

  std::filesystem::remove(ballast);
  BOOST_REQUIRE(m.fsm.write_applied());
  BOOST_TEST(m.fsm.applied_durably() == more);
  BOOST_TEST(m.store.applied_index() == more);
  names.push_back("after-the-failure");
  auto stored = users_of(m.store);
  for (const auto& name : names)
    BOOST_TEST((std::find(stored.begin(), stored.end(), name) != stored.end()), name);
  BOOST_TEST(heard.size() == names.size());
  BOOST_TEST(heard.back() == warren::persistence::user_key("after-the-failure"));
  auto written = m.fsm.take_written();
  BOOST_REQUIRE(written.size() == names.size());
  BOOST_TEST(written.front().first == first);
  BOOST_TEST(written.back().first == more);
}

// Entries written together grow a full map and are all written again, as one batch is (the
// store opens with at least its minimum map; 300 entries of 4 KiB outgrow it).
BOOST_AUTO_TEST_CASE(entries_written_together_grow_a_full_map) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path(), {}, 256 * 1024);
  std::vector<std::vector<meta_mutation>> changes;
  for (int i = 0; i < 300; ++i)
    changes.push_back({user_with_hash("user-" + std::to_string(1000 + i), std::string(4096, 'h'))});
  std::vector<lmdb_store::entry_write> writes;
  for (size_t i = 0; i < changes.size(); ++i) writes.push_back({i + 1, &changes[i]});
  store.apply_entries(writes);
  BOOST_TEST(store.applied_index() == 300u);
  BOOST_TEST(users_of(store).size() == 300u);
  for (const auto& w : writes) BOOST_TEST((w.done == applied::changed));
  // Given again (a restarted member's replay), the entries LMDB holds are skipped.
  store.apply_entries(writes);
  for (const auto& w : writes) BOOST_TEST((w.done == applied::skipped));
}

BOOST_AUTO_TEST_SUITE_END()
