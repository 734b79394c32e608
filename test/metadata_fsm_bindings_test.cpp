// Bindings between durable exchanges in the metadata log's state machine (issue 33): they are
// the log's records (in snapshots and seeds, and changes an entry may make), while bindings to
// queues stay each member's own; an entry deleting an exchange deletes its bindings with it.
#include "metadata_fsm_fixture.hpp"

using namespace warren::test::fsm;
using namespace warren::persistence;

namespace {

meta_mutation vhost(const std::string& name) {
  return {meta_table::vhosts, vhost_key(name), encode_vhost(name), false};
}

meta_mutation exchange(const std::string& in, const std::string& name) {
  stored_exchange e{in, {}};
  e.spec.name = name;
  e.spec.durable = true;
  return {meta_table::exchanges, exchange_key(in, name), encode_exchange(e), false};
}

meta_mutation binding(const std::string& in, const std::string& from, const std::string& to,
                      bool to_exchange) {
  stored_binding b{in, {}};
  b.spec.exchange = from;
  b.spec.destination = to;
  b.spec.key = "k";
  b.spec.to_exchange = to_exchange;
  return {meta_table::bindings, binding_key(in, b.spec), encode_binding(b), false};
}

// "vhost:source>destination" (an exchange) or "vhost:source>queue:destination" per binding.
std::set<std::string> bindings_in(lmdb_store& store) {
  std::set<std::string> out;
  for (const auto& b : store.load().bindings)
    out.insert(b.vhost + ":" + b.spec.exchange + ">" + (b.spec.to_exchange ? "" : "queue:") +
               b.spec.destination);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metadata_fsm_bindings_suite)

BOOST_AUTO_TEST_CASE(bindings_between_exchanges_are_the_logs_and_those_to_queues_the_members) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  store.apply({vhost("/"), exchange("/", "x"), exchange("/", "y"), binding("/", "x", "y", true),
               binding("/", "x", "y", false)});  // to a queue named y
  std::set<std::string> in_records;
  for (const auto& r : store.records())
    if (r.table == meta_table::bindings) in_records.insert(r.key);
  BOOST_TEST((in_records == std::set<std::string>{binding("/", "x", "y", true).key}));
  // A snapshot replaces the log's bindings and leaves the member's own.
  store.replace_all(
      {vhost("/"), exchange("/", "x"), exchange("/", "y"), binding("/", "y", "x", true)}, 4, true);
  BOOST_TEST((bindings_in(store) == std::set<std::string>{"/:x>queue:y", "/:y>x"}));
  // An entry may change the one kind, not the other, and a record must be named by its key.
  BOOST_TEST(lmdb_store::change_problem(binding("/", "a", "b", true)).empty());
  BOOST_TEST(
      lmdb_store::change_problem({meta_table::bindings, binding("/", "a", "b", true).key, "", true})
          .empty());
  auto to_queue = lmdb_store::change_problem(binding("/", "a", "b", false));
  BOOST_TEST(to_queue.find("this node's own") != std::string::npos, to_queue);
  auto named_wrong = binding("/", "a", "b", true);
  named_wrong.key = binding("/", "a", "c", true).key;
  BOOST_TEST(lmdb_store::change_problem(named_wrong).find("that its key does not name") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(deleting_an_exchange_through_the_log_deletes_its_bindings) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  store.apply({vhost("/"), vhost("v2"), exchange("/", "x"), exchange("/", "y"), exchange("/", "z"),
               exchange("v2", "x"), exchange("v2", "y"), binding("/", "x", "y", true),
               binding("/", "y", "z", true), binding("/", "z", "x", true),
               binding("/", "y", "q", false), binding("/", "x", "y", false),
               binding("v2", "x", "y", true), binding("v2", "y", "x", true)});
  BOOST_TEST((store.apply_entry(1, {{meta_table::exchanges, exchange_key("/", "y"), "", true}}) ==
              lmdb_store::entry_applied::changed));
  // Those from y and to the exchange y go; one to a queue of that name stays, as do another
  // vhost's.
  BOOST_TEST(
      (bindings_in(store) == std::set<std::string>{"/:z>x", "/:x>queue:y", "v2:x>y", "v2:y>x"}));
}

// "No binding from exchange x": an auto-delete exchange, or an if-unused delete, is deleted only
// while none of the log's bindings leads from it. Each member's own bindings to its queues
// differ between members, so they cannot count.
BOOST_AUTO_TEST_CASE(a_condition_on_no_binding_from_an_exchange_counts_the_logs_only) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path());
  meta_condition none_from_x;
  none_from_x.table = meta_table::bindings;
  none_from_x.key = binding_prefix("/", "x");
  none_from_x.prefix = true;
  auto entry = decode_metadata_entry(encode_metadata_entry({{}, {none_from_x}}));
  BOOST_REQUIRE(entry.conditions.size() == 1u);
  BOOST_TEST(entry.conditions[0].prefix);
  BOOST_TEST(lmdb_store::condition_problem(none_from_x).empty());
  auto on_queues = none_from_x;
  on_queues.table = meta_table::queues;
  BOOST_TEST(lmdb_store::condition_problem(on_queues).find("none of the log's records") !=
             std::string::npos);

  store.apply({vhost("/"), exchange("/", "x"), exchange("/", "xy"), exchange("/", "y"),
               binding("/", "x", "q", false), binding("/", "xy", "y", true)});
  meta_mutation erase_x{meta_table::exchanges, exchange_key("/", "x"), "", true};
  size_t failed = 99;
  // Bound to a queue of this member's, and another exchange's name starts with "x": it goes.
  BOOST_TEST((store.apply_entry(1, {erase_x}, {none_from_x}, &failed) ==
              lmdb_store::entry_applied::changed));
  store.apply_entry(2, {exchange("/", "x"), binding("/", "x", "y", true)});
  BOOST_TEST((store.apply_entry(3, {erase_x}, {none_from_x}, &failed) ==
              lmdb_store::entry_applied::refused));
  BOOST_TEST(failed == 0u);
  BOOST_TEST((bindings_in(store) == std::set<std::string>{"/:x>y", "/:xy>y"}));
}

// The log carries them like every other record: members that apply the same entries through an
// election hold the same bindings.
BOOST_AUTO_TEST_CASE(members_hold_the_same_bindings_between_exchanges) {
  cluster c(3);
  auto leader = c.leader();
  c.propose(leader, {vhost("/"), exchange("/", "x"), exchange("/", "y")});
  auto last = c.propose(leader, {binding("/", "x", "y", true)});
  BOOST_REQUIRE(last != 0u);
  for (unsigned m = 0; m < 3; ++m) {
    BOOST_REQUIRE(c.applied(m, last));
    BOOST_TEST((bindings_in(c.members[m]->store) == std::set<std::string>{"/:x>y"}), m);
  }
}

BOOST_AUTO_TEST_SUITE_END()
