// Users and permissions through the metadata log, in real warren-node processes (issue 33): a
// change made on any member is forwarded to the leader and answered once the member applied it,
// so it is read back at once where it was made, and anywhere after a sync; two members creating the
// same user at once end with one of them, the same everywhere; a member without a majority refuses
// such changes, naming the quorum, and goes on serving its queues; and a node's users from before
// the log seed it.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>

using warren::test::free_port;
using warren::test::node_process;
using warren::test::temp_dir;
using namespace warren::test::cluster;

namespace {

names users_of(const node_process& node) {
  names out;
  for (const auto& u : connect(node)->list_users()) out.insert(u.name);
  return out;
}

}  // namespace

// Whichever member takes a change, it is committed by the leader and answered once that member
// applied it: the member that made it lists it at once; the others apply it too.
BOOST_AUTO_TEST_CASE(a_user_change_made_on_any_member_is_read_back_there_at_once_and_everywhere) {
  three_nodes n;
  for (auto* made_on : n.all()) {
    auto name = "user-" + std::to_string(made_on->port());
    connect(*made_on)->add_user(name, "secret-" + name);
    BOOST_TEST(users_of(*made_on).count(name) == 1u, "not read back where it was made");
    BOOST_TEST(!logs_in(*made_on, name, "secret-" + name, "/"), "logged in without permissions");
    connect(*made_on)->set_permissions({name, "/", ".*", ".*", ".*"});
    BOOST_TEST(logs_in(*made_on, name, "secret-" + name, "/"), "not read back where it was made");
    for (auto* node : n.all())
      BOOST_TEST(eventually_logs_in(*node, name, "secret-" + name, "/"), name);
  }
  // Deleted on another member: gone everywhere, with its permissions.
  connect(*n.c)->delete_user("user-" + std::to_string(n.a->port()));
  for (auto* node : n.all())
    BOOST_TEST(access_seen(*node, [&](const names& users, const names&, const names& perms) {
      auto gone = "user-" + std::to_string(n.a->port());
      return users.count(gone) == 0 && perms.count(gone + "@/:.*/.*/.*") == 0;
    }));
}

// Listings read the member's own copy; a sync first makes them current: a change answered on one
// member is listed at once on each other member by a connection that synced after the answer.
BOOST_AUTO_TEST_CASE(a_sync_makes_a_members_listings_current) {
  three_nodes n;
  for (auto* made_on : n.all())
    for (auto* read_on : n.all()) {
      if (read_on == made_on) continue;
      auto name =
          "synced-" + std::to_string(made_on->port()) + "-" + std::to_string(read_on->port());
      auto reader = connect(*read_on);  // open before the change, so it cannot have seen it
      connect(*made_on)->add_user(name, "pw");
      reader->sync_metadata();
      names listed;
      for (const auto& u : reader->list_users()) listed.insert(u.name);
      BOOST_TEST(listed.count(name) == 1u, name << " not listed on port " << read_on->port());
    }
}

// A standalone node keeps no log: a sync has nothing to wait for.
BOOST_AUTO_TEST_CASE(a_sync_on_a_standalone_node_returns_at_once) {
  node_process solo;
  auto conn = connect(solo);
  conn->add_user("solo", "pw");
  conn->sync_metadata();
  names listed;
  for (const auto& u : conn->list_users()) listed.insert(u.name);
  BOOST_TEST(listed.count("solo") == 1u);
}

// Two members create one user name at once, with different passwords: one is told it exists,
// and every member keeps the winner's password.
BOOST_AUTO_TEST_CASE(of_two_members_creating_one_user_at_once_one_wins_everywhere) {
  three_nodes n;
  auto on_b = std::async(std::launch::async,
                         [&] { return refusal_of([&] { connect(*n.b)->add_user("dup", "pb"); }); });
  auto on_c = std::async(std::launch::async,
                         [&] { return refusal_of([&] { connect(*n.c)->add_user("dup", "pc"); }); });
  auto b_refused = on_b.get(), c_refused = on_c.get();
  BOOST_TEST_MESSAGE("b: '" << b_refused << "', c: '" << c_refused << "'");
  BOOST_REQUIRE((b_refused.empty() != c_refused.empty()));
  auto lost = b_refused.empty() ? c_refused : b_refused;
  BOOST_TEST(lost.find("user 'dup' already exists") != std::string::npos, lost);
  std::string winner = b_refused.empty() ? "pb" : "pc";
  std::string loser = b_refused.empty() ? "pc" : "pb";
  connect(*n.a)->set_permissions({"dup", "/", ".*", ".*", ".*"});
  for (auto* node : n.all()) {
    BOOST_TEST(eventually_logs_in(*node, "dup", winner, "/"));
    BOOST_TEST(!logs_in(*node, "dup", loser, "/"));
  }
}

// Two of three members killed: the one left refuses user changes within its quorum timeout,
// naming how many members it reaches, and still serves publish and consume on its queue. Once a
// member is back, changes go through again, and the restarted members hold them.
BOOST_AUTO_TEST_CASE(a_member_without_a_majority_refuses_user_changes_and_serves_its_queues) {
  three_nodes n;
  auto conn = connect(*n.a);
  auto ch = conn->open_channel();
  warren::client::queue_options durable;
  durable.durable = true;
  ch->queue_declare("stays", durable);
  BOOST_REQUIRE(home_of(*n.a, "stays") == "a");
  n.b->kill9();
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", false}, {"c", false}}));
  BOOST_REQUIRE(log_leader_seen(*n.a, ""));
  auto refused = refusal_of([&] { conn->add_user("lonely", "x"); });
  BOOST_TEST(refused.find("no quorum: 1 of 3 members reachable") != std::string::npos, refused);
  BOOST_TEST(users_of(*n.a).count("lonely") == 0u);
  // Its reads are local and may be stale; a linearizable one is refused, naming the quorum.
  auto unsynced = refusal_of([&] { conn->sync_metadata(); });
  BOOST_TEST(unsynced.find("metadata not synced: no quorum") != std::string::npos, unsynced);
  ch->confirm_select();
  auto sent = ch->publish_batch(numbered("stays", 10)).get();
  for (const auto& r : sent) BOOST_TEST((r.outcome == warren::publish_outcome::routed));
  BOOST_TEST(ready_in(*ch, "stays") == 10u);

  n.b = std::make_unique<node_process>(cluster_args("b", n.pb), n.b_dir.path());
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", true}, {"c", false}}));
  connect(*n.a)->add_user("back", "y");
  BOOST_TEST(access_seen(*n.b, [](const names& users, const names&, const names&) {
    return users.count("back") == 1;
  }));
  n.c = std::make_unique<node_process>(cluster_args("c", n.pc), n.c_dir.path());
  BOOST_TEST(access_seen(*n.c, [](const names& users, const names&, const names&) {
    return users.count("back") == 1 && users.count("lonely") == 0;
  }));
}

// A node's users from before it was clustered seed the log, and the members that join take them.
BOOST_AUTO_TEST_CASE(the_first_nodes_users_seed_the_log_and_joiners_take_them) {
  temp_dir a_dir, b_dir;
  {
    node_process alone({}, a_dir.path());
    connect(alone)->add_user("from-before", "old");
  }
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa), a_dir.path());
  BOOST_TEST(a.wait_for_log("metadata log seeded"), a.log());
  node_process b(cluster_args("b", pb, address(pa)), b_dir.path());
  for (auto* node : {&a, &b})
    BOOST_TEST(access_seen(*node, [](const names& users, const names&, const names&) {
      return users == names{"from-before", "guest"};
    }));
}
