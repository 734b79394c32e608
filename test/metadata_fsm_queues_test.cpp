// Durable queues' records in the metadata log's state machine (issue 33): table queue_homes is
// the log's (in snapshots and seeds, changed by entries), each home's own queue record (with the
// id naming its message folder) stays its own, and an entry erasing a queue's name erases its
// home's own record in the same transaction.
#include "metadata_fsm_fixture.hpp"

using namespace warren::test::fsm;
using namespace warren::persistence;

namespace {

meta_mutation vhost(const std::string& name) {
  return {meta_table::vhosts, vhost_key(name), encode_vhost(name), false};
}

stored_queue queue_named(const std::string& name, const std::string& home, uint64_t id) {
  stored_queue q{"/", {}, id};
  q.spec.name = name;
  q.spec.durable = true;
  q.spec.home = home;
  return q;
}

meta_mutation queue_home(const std::string& name, const std::string& home) {
  return {meta_table::queue_homes, queue_key("/", name), encode_queue(queue_named(name, home, 0)),
          false};
}

meta_mutation own_queue(const std::string& name, uint64_t id) {
  return {meta_table::queues, queue_key("/", name), encode_queue(queue_named(name, "", id)), false};
}

std::set<std::string> names_in(const std::vector<stored_queue>& queues) {
  std::set<std::string> out;
  for (const auto& q : queues)
    out.insert(q.spec.name + (q.spec.home.empty() ? "" : "@") + q.spec.home);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metadata_fsm_queues_suite)

BOOST_AUTO_TEST_CASE(queue_homes_are_the_logs_and_a_homes_own_records_its_own) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  store.apply({vhost("/"), queue_home("q", "a"), own_queue("q", 7), own_queue("mine", 8)});
  auto held = store.load();
  BOOST_TEST((names_in(held.queue_homes) == std::set<std::string>{"q@a"}));
  BOOST_TEST((names_in(held.queues) == std::set<std::string>{"q", "mine"}));
  // A snapshot replaces the log's names and leaves the member's own records.
  store.replace_all({vhost("/"), queue_home("r", "b")}, 4, true);
  held = store.load();
  BOOST_TEST((names_in(held.queue_homes) == std::set<std::string>{"r@b"}));
  BOOST_TEST((names_in(held.queues) == std::set<std::string>{"q", "mine"}));
  // An entry may change the log's records only, each named by its key and with a home.
  BOOST_TEST(lmdb_store::change_problem(queue_home("a", "n1")).empty());
  auto own = lmdb_store::change_problem(own_queue("a", 1));
  BOOST_TEST(own.find("this node's own") != std::string::npos, own);
  auto homeless = lmdb_store::change_problem(queue_home("a", ""));
  BOOST_TEST(homeless.find("that its key does not name") != std::string::npos, homeless);
  auto named_wrong = queue_home("a", "n1");
  named_wrong.key = queue_key("/", "b");
  BOOST_TEST(lmdb_store::change_problem(named_wrong).find("that its key does not name") !=
             std::string::npos);
}

// A home that stops after the log erased a queue's name, before its vhost deleted the queue,
// must not find the queue again when it starts: the entry's apply erases both records at once.
BOOST_AUTO_TEST_CASE(erasing_a_queues_name_through_the_log_erases_its_homes_own_record) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  store.apply({vhost("/"), queue_home("q", "a"), own_queue("q", 7), own_queue("other", 8)});
  BOOST_TEST((store.apply_entry(1, {{meta_table::queue_homes, queue_key("/", "q"), "", true}}) ==
              lmdb_store::entry_applied::changed));
  auto held = store.load();
  BOOST_TEST(held.queue_homes.empty());
  BOOST_TEST((names_in(held.queues) == std::set<std::string>{"other"}));
}

// Of two members declaring one name, every member keeps the first committed: the second
// entry's condition (the name absent) fails alike everywhere.
BOOST_AUTO_TEST_CASE(members_keep_the_first_of_two_declares_of_one_queue_name) {
  cluster c(3);
  auto leader = c.leader();
  c.propose(leader, {vhost("/")});
  meta_condition absent{meta_table::queue_homes, queue_key("/", "q"), false};
  c.propose(leader, {queue_home("q", "a")}, {absent});
  auto last = c.propose(leader, {queue_home("q", "b")}, {absent});
  BOOST_REQUIRE(last != 0u);
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, last));
    BOOST_TEST((names_in(c.members[m]->store.load().queue_homes) == std::set<std::string>{"q@a"}),
               m);
  }
}

BOOST_AUTO_TEST_SUITE_END()
