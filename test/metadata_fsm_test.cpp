// The cluster's metadata as a Raft log's state machine (persistence/metadata_fsm.hpp), driven by
// libraft's own test fixture: in-memory network and disks, simulated time, so elections,
// partitions and snapshots are deterministic. Each member's state machine is a real LMDB store.
#include "metadata_fsm_fixture.hpp"

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>

using namespace warren::test::fsm;

BOOST_AUTO_TEST_SUITE(metadata_fsm_suite)

BOOST_AUTO_TEST_CASE(log_bytes_round_trip_and_hostile_ones_are_refused_by_name) {
  using namespace warren::persistence;
  std::vector<meta_mutation> batch{user("ann"), {meta_table::queues, "k", "", true}};
  auto back = decode_metadata_batch(encode_metadata_batch(batch));
  BOOST_REQUIRE(back.size() == 2u);
  BOOST_TEST(back[0].key == batch[0].key);
  BOOST_TEST(back[0].value == batch[0].value);
  BOOST_TEST(back[1].erase);
  BOOST_TEST((back[1].table == meta_table::queues));

  auto bad_table = batch;
  bad_table[0].table = static_cast<meta_table>(200);
  BOOST_CHECK_EXCEPTION(decode_metadata_batch(encode_metadata_batch(bad_table)), std::runtime_error,
                        [](const std::runtime_error& e) {
                          return std::string(e.what()).find("table 200") != std::string::npos;
                        });
  BOOST_CHECK_THROW(decode_metadata_batch("not a message"), std::runtime_error);
  BOOST_CHECK_THROW(decode_metadata_batch(std::string(64, '\xff')), std::runtime_error);
  metadata_entry conditional{{user("ann")}, {{meta_table::users, user_key("ann"), false}}};
  auto entry = decode_metadata_entry(encode_metadata_entry(conditional));
  BOOST_REQUIRE(entry.conditions.size() == 1u);
  BOOST_TEST(entry.conditions[0].key == user_key("ann"));
  BOOST_TEST(!entry.conditions[0].present);
  BOOST_TEST((entry.conditions[0].table == meta_table::users));
  // A reader of plain batches must not drop conditions silently.
  BOOST_CHECK_THROW(decode_metadata_batch(encode_metadata_entry(conditional)), std::runtime_error);
  conditional.conditions[0].table = static_cast<meta_table>(99);
  BOOST_CHECK_THROW(decode_metadata_entry(encode_metadata_entry(conditional)), std::runtime_error);
  metadata_snapshot with_erase{7, {{meta_table::users, "k", "", true}}};
  BOOST_CHECK_THROW(decode_metadata_snapshot(encode_metadata_snapshot(with_erase)),
                    std::runtime_error);
}

using applied = lmdb_store::entry_applied;

// raft hands a restarted member its log again from the last snapshot: what LMDB holds already
// is skipped by its index.
BOOST_AUTO_TEST_CASE(an_entry_is_applied_once_with_its_index) {
  warren::test::temp_dir dir;
  {
    lmdb_store store(dir.path());
    BOOST_TEST(store.applied_index() == 0u);
    BOOST_TEST((store.apply_entry(1, {user("ann")}) == applied::changed));
    BOOST_TEST((store.apply_entry(2, {user("bob")}) == applied::changed));
  }
  lmdb_store store(dir.path());
  BOOST_TEST(store.applied_index() == 2u);
  BOOST_TEST((store.apply_entry(2, {user("carl")}) == applied::skipped));
  BOOST_TEST((store.apply_entry(1, {{meta_table::users, warren::persistence::user_key("ann"), "",
                                     true}}) == applied::skipped));
  BOOST_TEST((users_of(store) == std::vector<std::string>{"ann", "bob"}));
  BOOST_TEST((store.apply_entry(3, {}) == applied::changed));  // an empty entry moves the index
  BOOST_TEST(store.applied_index() == 3u);
  store.replace_all({user("dora")}, 10, false);  // a snapshot: what it lacks goes
  BOOST_TEST((users_of(store) == std::vector<std::string>{"dora"}));
  BOOST_TEST(store.applied_index() == 10u);
}

// An entry whose condition does not hold records its index and nothing else, and says which
// condition failed.
BOOST_AUTO_TEST_CASE(an_entry_whose_condition_fails_changes_nothing_but_the_index) {
  using warren::persistence::meta_condition;
  using warren::persistence::user_key;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  BOOST_TEST((store.apply_entry(1, {user("ann")}) == applied::changed));
  size_t failed = 99;
  std::vector<meta_condition> bob_absent_ann_absent{{meta_table::users, user_key("bob"), false},
                                                    {meta_table::users, user_key("ann"), false}};
  BOOST_TEST(
      (store.apply_entry(2, {user("bob")}, bob_absent_ann_absent, &failed) == applied::refused));
  BOOST_TEST(failed == 1u);
  BOOST_TEST((users_of(store) == std::vector<std::string>{"ann"}));
  BOOST_TEST(store.applied_index() == 2u);
  std::vector<meta_condition> ann_present{{meta_table::users, user_key("ann"), true}};
  BOOST_TEST((store.apply_entry(3, {user("bob")}, ann_present) == applied::changed));
  BOOST_TEST((users_of(store) == std::vector<std::string>{"ann", "bob"}));
}

// A node's own tables (its cluster members, its metadata version, the offsets of streams living
// on it, and the queues, exchanges and bindings until their changes move to the log) are not the
// log's: a snapshot neither carries nor replaces them, and an entry may not change them.
BOOST_AUTO_TEST_CASE(a_snapshot_leaves_the_members_own_tables_alone) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  warren::cluster_member self{"n1", "127.0.0.1:1"};
  stored_queue q{"/", {}, 1};
  q.spec.name = "mine";
  q.spec.durable = true;
  store.apply({{meta_table::members, member_key("n1"), encode_member(self), false},
               {meta_table::cluster, cluster_state_key, encode_cluster_state(7), false},
               {meta_table::queues, queue_key("/", "mine"), encode_queue(q), false},
               user("ann")});
  for (const auto& r : store.records()) BOOST_TEST((r.table == meta_table::users), r.key);
  store.replace_all({user("dora")}, 10, false);
  auto contents = store.load();
  BOOST_TEST(contents.queues.size() == 1u, "a snapshot replaced this node's own queues");
  BOOST_TEST(contents.members.size() == 1u);
  BOOST_TEST(contents.metadata_version == 7u);
  BOOST_TEST((users_of(store) == std::vector<std::string>{"dora"}));
  BOOST_TEST(lmdb_store::change_problem(
                 {meta_table::members, member_key("n2"), encode_member(self), false})
                 .find("this node's own") != std::string::npos);
}

// A seed is the log's first state: it replaces what the log's tables held, once. A later seed
// (a second leader that found the log unseeded before the first seed reached it) changes
// nothing but the index; a snapshot carries whether the log was seeded; a new log starts over.
BOOST_AUTO_TEST_CASE(a_seed_replaces_the_logs_tables_once) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  store.apply({user("local")});
  BOOST_TEST(!store.log_seeded());
  BOOST_TEST((store.apply_entry(1, {user("ann")}, {}, nullptr, true) ==
              lmdb_store::entry_applied::changed));
  BOOST_TEST((users_of(store) == std::vector<std::string>{"ann"}));
  BOOST_TEST(store.log_seeded());
  BOOST_TEST((store.apply_entry(2, {user("bob")}, {}, nullptr, true) ==
              lmdb_store::entry_applied::ignored));
  BOOST_TEST((users_of(store) == std::vector<std::string>{"ann"}));
  BOOST_TEST(store.applied_index() == 2u);

  auto snap = decode_metadata_snapshot(encode_metadata_snapshot({2, store.records(), true}));
  BOOST_TEST(snap.seeded);
  warren::test::temp_dir other_dir;
  lmdb_store other(other_dir.path());
  other.replace_all(snap.records, snap.applied_index, snap.seeded);
  BOOST_TEST(other.log_seeded());

  store.write_log_identity({lmdb_store::log_identity::stage::joining, "n1"});
  BOOST_TEST(!store.log_seeded());
  BOOST_TEST(store.applied_index() == 0u);
  BOOST_CHECK_THROW(decode_metadata_entry(encode_metadata_entry(
                        {{{meta_table::users, user_key("x"), "", true}}, {}, true})),
                    std::runtime_error);
}

// A log entry that deletes a user deletes every permission of that user, those it does not name
// included (granted on another member while the delete was under way), and only that user's.
BOOST_AUTO_TEST_CASE(deleting_a_user_through_the_log_deletes_all_its_permissions) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  auto permission = [](const std::string& user, const std::string& vhost) {
    return meta_mutation{meta_table::permissions, permission_key(user, vhost),
                         encode_permission({user, vhost, ".*", ".*", ".*"}), false};
  };
  BOOST_TEST((store.apply_entry(1, {user("al"), user("alice"), permission("al", "/"),
                                    permission("al", "v2"), permission("alice", "/")}) ==
              lmdb_store::entry_applied::changed));
  store.apply_entry(2, {{meta_table::users, user_key("al"), "", true}});
  auto left = store.load().permissions;
  BOOST_REQUIRE(left.size() == 1u);
  BOOST_TEST(left[0].user == "alice");
}

// A log entry that deletes a vhost deletes, in the same transaction, its permissions and this
// member's exchanges, queues and bindings in it (a node stopped before its vhost actor deleted
// them must not find them again), and nothing of another vhost, one whose name starts alike
// included.
BOOST_AUTO_TEST_CASE(deleting_a_vhost_through_the_log_deletes_what_it_held) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  std::vector<meta_mutation> batch;
  for (std::string vhost : {"v", "v2"}) {
    batch.push_back({meta_table::vhosts, vhost_key(vhost), encode_vhost(vhost), false});
    batch.push_back({meta_table::permissions, permission_key("al", vhost),
                     encode_permission({"al", vhost, ".*", ".*", ".*"}), false});
    stored_queue q{vhost, {}, vhost == "v" ? 1u : 2u};
    q.spec.name = "q";
    batch.push_back({meta_table::queues, queue_key(vhost, "q"), encode_queue(q), false});
    stored_exchange e{vhost, {}};
    e.spec.name = "x";
    batch.push_back({meta_table::exchanges, exchange_key(vhost, "x"), encode_exchange(e), false});
    stored_binding b{vhost, {}};
    b.spec.exchange = "x";
    b.spec.destination = "q";
    batch.push_back({meta_table::bindings, binding_key(vhost, b.spec), encode_binding(b), false});
  }
  store.apply(batch);
  store.apply_entry(1, {{meta_table::vhosts, vhost_key("v"), "", true}});
  auto left = store.load();
  BOOST_TEST((left.vhosts == std::vector<std::string>{"v2"}));
  BOOST_REQUIRE(left.permissions.size() == 1u);
  BOOST_TEST(left.permissions[0].vhost == "v2");
  BOOST_REQUIRE(left.queues.size() == 1u);
  BOOST_TEST(left.queues[0].vhost == "v2");
  BOOST_REQUIRE(left.exchanges.size() == 1u);
  BOOST_TEST(left.exchanges[0].vhost == "v2");
  BOOST_REQUIRE(left.bindings.size() == 1u);
  BOOST_TEST(left.bindings[0].vhost == "v2");
}

// A snapshot or seed without a vhost this member had is that vhost deleted: what it held goes
// too, or a restart would find queues and exchanges of a vhost that no longer exists.
BOOST_AUTO_TEST_CASE(a_snapshot_without_a_vhost_takes_what_the_vhost_held) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  std::vector<meta_mutation> batch;
  for (std::string vhost : {"gone", "kept"}) {
    batch.push_back({meta_table::vhosts, vhost_key(vhost), encode_vhost(vhost), false});
    stored_queue q{vhost, {}, vhost == "gone" ? 1u : 2u};
    q.spec.name = "q";
    batch.push_back({meta_table::queues, queue_key(vhost, "q"), encode_queue(q), false});
    stored_exchange e{vhost, {}};
    e.spec.name = "x";
    batch.push_back({meta_table::exchanges, exchange_key(vhost, "x"), encode_exchange(e), false});
  }
  store.apply(batch);
  // The log may hold a permission for a vhost deleted meanwhile (set on another member): the
  // snapshot's records are the log's, and stay as they are. Durable exchanges are the log's too:
  // the kept vhost's comes with the snapshot.
  auto orphan = encode_permission({"al", "gone", ".*", ".*", ".*"});
  stored_exchange kept_x{"kept", {}};
  kept_x.spec.name = "x";
  store.replace_all(
      {{meta_table::vhosts, vhost_key("kept"), encode_vhost("kept"), false},
       {meta_table::permissions, permission_key("al", "gone"), orphan, false},
       {meta_table::exchanges, exchange_key("kept", "x"), encode_exchange(kept_x), false}},
      5, true);
  auto left = store.load();
  BOOST_TEST((left.vhosts == std::vector<std::string>{"kept"}));
  BOOST_TEST(left.permissions.size() == 1u, "the snapshot's permission was dropped");
  BOOST_REQUIRE(left.queues.size() == 1u);
  BOOST_TEST(left.queues[0].vhost == "kept");
  BOOST_REQUIRE(left.exchanges.size() == 1u);
  BOOST_TEST(left.exchanges[0].vhost == "kept");
}

// Durable exchanges are the log's: a snapshot without one its vhost still has takes it away (it
// was deleted on the members meanwhile), and one it has that this member lacked comes.
BOOST_AUTO_TEST_CASE(a_snapshot_replaces_the_durable_exchanges) {
  using namespace warren::persistence;
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  auto exchange = [](const std::string& name) {
    stored_exchange e{"/", {}};
    e.spec.name = name;
    e.spec.durable = true;
    return meta_mutation{meta_table::exchanges, exchange_key("/", name), encode_exchange(e), false};
  };
  store.apply({{meta_table::vhosts, vhost_key("/"), encode_vhost("/"), false}, exchange("old")});
  store.replace_all(
      {{meta_table::vhosts, vhost_key("/"), encode_vhost("/"), false}, exchange("new")}, 9, true);
  auto left = store.load();
  BOOST_REQUIRE(left.exchanges.size() == 1u);
  BOOST_TEST(left.exchanges[0].spec.name == "new");
  // And an exchange record must be named by its key, as every record of the log's tables.
  auto named_wrong = exchange("a");
  named_wrong.key = exchange_key("/", "b");
  BOOST_TEST(lmdb_store::change_problem(named_wrong).find("that its key does not name") !=
             std::string::npos);
}

// What a log entry may change is checked as the store would read it back.
BOOST_AUTO_TEST_CASE(a_record_its_key_does_not_name_is_refused) {
  using namespace warren::persistence;
  auto problem = lmdb_store::change_problem(
      {meta_table::users, user_key("alice"), encode_user({"root", "h", {}}), false});
  BOOST_TEST(problem.find("that its key does not name") != std::string::npos, problem);
  problem = lmdb_store::change_problem({meta_table::permissions, permission_key("alice", "/"),
                                        encode_permission({"root", "/", ".*", ".*", ".*"}), false});
  BOOST_TEST(problem.find("that its key does not name") != std::string::npos, problem);
}

BOOST_AUTO_TEST_CASE(a_change_that_could_not_be_stored_or_read_back_is_named) {
  using warren::persistence::user_key;
  BOOST_TEST(lmdb_store::change_problem(user("ann")).empty());
  BOOST_TEST(lmdb_store::change_problem({meta_table::users, user_key("x"), "", true}).empty());
  BOOST_TEST(lmdb_store::change_problem({meta_table::users, "", "v", false}).find("empty key") !=
             std::string::npos);
  BOOST_TEST(lmdb_store::change_problem({meta_table::users, std::string(512, 'k'), "", true})
                 .find("512 bytes") != std::string::npos);
  BOOST_TEST(lmdb_store::change_problem({meta_table::users, "k", "not a record", false})
                 .find("does not decode") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(three_members_apply_the_same_entries_in_order_through_an_election) {
  cluster c(3);
  auto first = c.leader();
  raft_index last = 0;
  for (int i = 0; i < 5; ++i) last = c.propose(first, {user("u" + std::to_string(i))});
  BOOST_REQUIRE(last != 0u);
  for (unsigned m = 0; m < 3; ++m) BOOST_REQUIRE(c.applied(m, last));

  raft_fixture_depose(&c.f);  // another election; the log goes on under the next leader
  auto second = c.leader();
  last = c.propose(
      second, {user("after"), {meta_table::users, warren::persistence::user_key("u0"), "", true}});
  BOOST_REQUIRE(last != 0u);
  std::vector<std::string> expected{"after", "u1", "u2", "u3", "u4"};
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, last));
    BOOST_TEST(users_of(c.members[m]->store) == expected);
    BOOST_TEST(c.members[m]->store.applied_index() == last);
  }
}

// Two members create one name at the same moment: both entries commit, and every member applies
// the first and refuses the second alike, whoever proposed which.
BOOST_AUTO_TEST_CASE(of_two_creates_of_one_name_every_member_keeps_the_first) {
  using warren::persistence::user_key;
  cluster c(3);
  auto leader = c.leader();
  std::vector<warren::persistence::meta_condition> absent{
      {meta_table::users, user_key("x"), false}};
  auto first = c.propose(leader, {user_with_hash("x", "first")}, absent);
  auto second = c.propose(leader, {user_with_hash("x", "second")}, absent);
  auto other = c.propose(leader, {user("y")}, {{meta_table::users, user_key("y"), false}});
  BOOST_REQUIRE(first != 0u);
  BOOST_REQUIRE(second != 0u);
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, other));
    BOOST_TEST(hash_of(c.members[m]->store, "x") == "first");
    BOOST_TEST((users_of(c.members[m]->store) == std::vector<std::string>{"x", "y"}));
    BOOST_TEST(c.members[m]->fsm.undecodable() == 0u);
  }
}

// A condition no member could look up (a key LMDB refuses) skips the entry alike, as a change
// that could not be stored does.
BOOST_AUTO_TEST_CASE(an_entry_with_a_condition_lmdb_cannot_look_up_is_skipped_alike) {
  cluster c(3);
  auto leader = c.leader();
  auto bad =
      c.propose(leader, {user("kept-out")}, {{meta_table::users, std::string(600, 'k'), false}});
  auto good = c.propose(leader, {user("after")});
  BOOST_REQUIRE(bad != 0u);
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, good));
    BOOST_TEST((users_of(c.members[m]->store) == std::vector<std::string>{"after"}));
    BOOST_TEST(c.members[m]->fsm.undecodable() == 1u);
  }
}

// An entry with a change no member could store or read back (a member's bug, or a hostile
// one) is applied as empty on every member alike: none stops on it, and the log goes on.
BOOST_AUTO_TEST_CASE(an_entry_no_member_could_store_is_skipped_alike_and_the_log_goes_on) {
  cluster c(3);
  auto leader = c.leader();
  auto bad = c.propose(leader, {user("kept-out"), {meta_table::users, "", "x", false}});
  auto undecodable = c.propose(leader, {{meta_table::users, "k", "not a record", false}});
  auto good = c.propose(leader, {user("after")});
  BOOST_REQUIRE(bad != 0u);
  BOOST_REQUIRE(undecodable != 0u);
  BOOST_REQUIRE(good != 0u);
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, good));
    BOOST_TEST((users_of(c.members[m]->store) == std::vector<std::string>{"after"}));
    BOOST_TEST(c.members[m]->fsm.undecodable() == 2u);
    BOOST_TEST(c.members[m]->store.applied_index() == good);
  }
}

// A leader cut off from the majority takes a change it can never commit: the majority elects
// another leader and goes on; once healed, the old leader takes the majority's log, and the
// change it took is applied nowhere.
BOOST_AUTO_TEST_CASE(a_change_taken_by_a_cut_off_leader_is_applied_nowhere) {
  cluster c(3);
  auto old_leader = c.leader();
  auto base = c.propose(old_leader, {user("before")});
  for (unsigned m = 0; m < 3; ++m) BOOST_REQUIRE(c.applied(m, base));

  c.partition(old_leader);
  BOOST_TEST(c.propose(old_leader, {user("lost")}) != 0u);  // taken, never committed
  std::vector<unsigned> majority;
  for (unsigned m = 0; m < 3; ++m)
    if (m != old_leader) majority.push_back(m);
  auto new_leader = c.leader_among(majority);
  auto kept = c.propose(new_leader, {user("kept")});
  BOOST_REQUIRE(kept != 0u);
  for (auto m : majority) BOOST_REQUIRE(c.applied(m, kept));

  c.heal(old_leader);
  BOOST_REQUIRE(c.applied(old_leader, kept));
  for (unsigned m = 0; m < 3; ++m)
    BOOST_TEST((users_of(c.members[m]->store) == std::vector<std::string>{"before", "kept"}));
}

// With a short log (snapshots every few entries), a member cut off while the others truncate
// their log catches up from a snapshot: restored into its LMDB, index and all. With grouped
// commits too, where the entries applied wait to be written while raft snapshots and restores.
BOOST_DATA_TEST_CASE(a_member_far_behind_catches_up_from_a_snapshot,
                     boost::unit_test::data::make({false, true}), grouped) {
  cluster c(3, grouped);
  for (unsigned m = 0; m < 3; ++m) {
    raft_set_snapshot_threshold(c.server(m), 4);
    raft_set_snapshot_trailing(c.server(m), 1);
  }
  auto leader = c.leader();
  unsigned behind = (leader + 1) % 3;
  // What the member holds before it is cut off, and the others erase meanwhile, must go.
  auto stale = c.propose(leader, {user("stale")});
  BOOST_REQUIRE(stale != 0u);
  for (unsigned m = 0; m < 3; ++m) BOOST_REQUIRE(c.applied(m, stale));
  c.write_applied();
  c.partition(behind);
  auto cut_off_at = c.members[behind]->store.applied_index();
  raft_index last =
      c.propose(leader, {{meta_table::users, warren::persistence::user_key("stale"), "", true}});
  BOOST_REQUIRE(last != 0u);
  std::vector<std::string> expected;
  for (int i = 0; i < 20; ++i) {
    expected.push_back("user-" + std::to_string(100 + i));
    last = c.propose(leader, {user(expected.back())});
    BOOST_REQUIRE(last != 0u);
    BOOST_REQUIRE(c.applied(leader, last));
  }
  BOOST_TEST(c.members[behind]->store.applied_index() == cut_off_at);  // it took nothing
  BOOST_TEST(c.members[behind]->fsm.snapshots_restored() == 0u);
  c.heal(behind);
  BOOST_REQUIRE(c.applied(behind, last));
  c.write_applied();
  BOOST_TEST(c.members[behind]->fsm.snapshots_restored() >= 1u);
  BOOST_TEST(users_of(c.members[behind]->store) == expected);
  BOOST_TEST(c.members[behind]->store.applied_index() == last);
  BOOST_TEST(c.members[behind]->fsm.applied_durably() == last);
}

BOOST_AUTO_TEST_SUITE_END()
