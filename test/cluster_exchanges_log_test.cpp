// Durable exchanges through the metadata log, in real warren-node processes (issue 33): one
// declared or deleted on any member is so on every member once it synced; two members
// declaring one name differently end with one declaration everywhere, the other refused; a
// member restarted after changes it missed catches up; and a member without a majority refuses,
// naming the quorum, while its exchanges stay as they were.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using warren::test::node_process;
using namespace warren::test::cluster;

namespace {

// The durable exchanges (name -> type) `node` lists in vhost "/" once it synced with the log.
std::map<std::string, std::string> synced_exchanges(const node_process& node) {
  auto conn = connect(node);
  conn->sync_metadata();
  std::map<std::string, std::string> out;
  for (const auto& e : conn->list_exchanges())
    if (e.durable && !e.name.empty() && e.name.rfind("amq.", 0) != 0) out[e.name] = e.type;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_durable_exchange_declared_or_deleted_on_any_member_is_so_on_every_member) {
  three_nodes n;
  connect(*n.b)->open_channel()->exchange_declare("orders", "direct", durable_exchange());
  connect(*n.c)->open_channel()->exchange_declare("events", "topic", durable_exchange());
  std::map<std::string, std::string> both{{"orders", "direct"}, {"events", "topic"}};
  for (auto* node : n.all()) BOOST_TEST((synced_exchanges(*node) == both), node->port());
  // Declared again on another member with the same arguments: no change, no error.
  connect(*n.a)->open_channel()->exchange_declare("orders", "direct", durable_exchange());
  connect(*n.a)->open_channel()->exchange_delete("events");
  std::map<std::string, std::string> left{{"orders", "direct"}};
  for (auto* node : n.all()) BOOST_TEST((synced_exchanges(*node) == left), node->port());
  // Deleting what is gone is not an error, on any member.
  connect(*n.c)->open_channel()->exchange_delete("events");
}

BOOST_AUTO_TEST_CASE(two_members_declaring_one_name_differently_end_with_one_declaration) {
  three_nodes n;
  std::string refused_on_a, refused_on_b;
  std::thread on_a([&] {
    refused_on_a = refusal_of([&] {
      connect(*n.a)->open_channel()->exchange_declare("x", "fanout", durable_exchange());
    });
  });
  std::thread on_b([&] {
    refused_on_b = refusal_of(
        [&] { connect(*n.b)->open_channel()->exchange_declare("x", "topic", durable_exchange()); });
  });
  on_a.join();
  on_b.join();
  BOOST_TEST_MESSAGE("a: " << refused_on_a << "; b: " << refused_on_b);
  BOOST_REQUIRE((refused_on_a.empty() != refused_on_b.empty()));
  auto refused = refused_on_a.empty() ? refused_on_b : refused_on_a;
  BOOST_TEST(refused.find("PRECONDITION_FAILED") != std::string::npos, refused);
  std::string winner = refused_on_a.empty() ? "fanout" : "topic";
  for (auto* node : n.all()) BOOST_TEST(synced_exchanges(*node)["x"] == winner, node->port());
}

BOOST_AUTO_TEST_CASE(a_member_restarted_after_changes_it_missed_catches_up) {
  three_nodes n;
  connect(*n.a)->open_channel()->exchange_declare("old", "fanout", durable_exchange());
  BOOST_REQUIRE(synced_exchanges(*n.c).count("old") == 1u);
  n.c.reset();  // stopped
  connect(*n.a)->open_channel()->exchange_delete("old");
  connect(*n.b)->open_channel()->exchange_declare("new", "headers", durable_exchange());
  n.c = std::make_unique<node_process>(cluster_args("c", n.pc), n.c_dir.path());
  std::map<std::string, std::string> now{{"new", "headers"}};
  BOOST_TEST((synced_exchanges(*n.c) == now));
}

BOOST_AUTO_TEST_CASE(a_member_without_a_majority_refuses_exchange_changes) {
  three_nodes n;
  connect(*n.a)->open_channel()->exchange_declare("kept", "direct", durable_exchange());
  n.b->kill9();
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", false}, {"c", false}}));
  BOOST_REQUIRE(log_leader_seen(*n.a, ""));
  auto conn = connect(*n.a);
  for (const auto& refused : {refusal_of([&] {
                                conn->open_channel()->exchange_declare("lonely", "direct",
                                                                       durable_exchange());
                              }),
                              refusal_of([&] { conn->open_channel()->exchange_delete("kept"); })})
    BOOST_TEST(refused.find("no quorum: 1 of 3 members reachable") != std::string::npos, refused);
  std::map<std::string, std::string> listed;
  for (const auto& e : conn->list_exchanges())
    if (e.durable && e.name.rfind("amq.", 0) != 0 && !e.name.empty()) listed[e.name] = e.type;
  BOOST_TEST((listed == std::map<std::string, std::string>{{"kept", "direct"}}));
}

// A member's bindings to its exclusive queues stay on that member, so the others cannot tell
// that an auto-delete exchange still has bindings: only the member the unbind was made on may
// decide to delete it.
BOOST_AUTO_TEST_CASE(an_auto_delete_exchange_outlives_an_unbind_while_a_member_keeps_a_binding) {
  three_nodes n;
  auto options = durable_exchange();
  options.auto_delete = true;
  auto on_b = connect(*n.b);
  auto channel = on_b->open_channel();
  channel->exchange_declare("fleeting", "direct", options);
  warren::client::queue_options shared, mine;
  shared.durable = true;
  mine.exclusive = true;
  channel->queue_declare("shared", shared);
  channel->queue_declare("mine", mine);
  channel->queue_bind("shared", "fleeting", "k");
  channel->queue_bind("mine", "fleeting", "k");
  channel->queue_unbind("shared", "fleeting", "k");
  // Once a and c have taken the unbind (they list no binding: b's to "mine" is b's alone), any
  // deletion they proposed on taking it went to the log before their next change.
  BOOST_REQUIRE(bindings_seen(*n.a, "fleeting", {}));
  BOOST_REQUIRE(bindings_seen(*n.c, "fleeting", {}));
  connect(*n.a)->open_channel()->exchange_declare("after-a", "fanout", durable_exchange());
  connect(*n.c)->open_channel()->exchange_declare("after-c", "fanout", durable_exchange());
  for (auto* node : n.all()) {
    auto held = synced_exchanges(*node);
    BOOST_TEST(held.count("after-a") + held.count("after-c") == 2u, node->port());
    BOOST_TEST(held.count("fleeting") == 1u, node->port());
  }
  // The last binding goes on b, its member: the exchange goes everywhere.
  channel->queue_unbind("mine", "fleeting", "k");
  for (auto* node : n.all()) BOOST_TEST(synced_exchanges(*node).count("fleeting") == 0u);
}

// Right after a declare is answered on a, b may not have applied it yet (it learns of the
// commit with the leader's next message). A bind to it, an unbind, and a delete on b first sync
// with the log, so they find it; before, the bind was refused with NOT_FOUND and the delete
// answered as done while the exchange stayed on every member.
BOOST_AUTO_TEST_CASE(a_member_behind_the_log_binds_to_and_deletes_an_exchange_just_declared) {
  three_nodes n;
  auto a = connect(*n.a);
  auto on_a = a->open_channel();
  auto b = connect(*n.b);
  warren::client::queue_options q;
  q.durable = true;
  b->open_channel()->queue_declare("target", q);
  constexpr int rounds = 20;
  for (int i = 0; i < rounds; ++i) {
    auto name = "fresh-" + std::to_string(i);
    on_a->exchange_declare(name, "direct", durable_exchange());
    BOOST_TEST(refusal_of([&] { b->open_channel()->queue_bind("target", name, "k"); }).empty(),
               name);
    on_a->exchange_declare(name + "-unbound", "direct", durable_exchange());
    BOOST_TEST(refusal_of([&] {
                 b->open_channel()->queue_unbind("target", name + "-unbound", "k");
               }).empty(),
               name);
    on_a->exchange_declare(name + "-gone", "direct", durable_exchange());
    b->open_channel()->exchange_delete(name + "-gone");
  }
  for (auto* node : n.all()) {
    auto held = synced_exchanges(*node);
    for (int i = 0; i < rounds; ++i) {
      auto name = "fresh-" + std::to_string(i);
      BOOST_TEST(held.count(name) == 1u, node->port() << " " << name);
      BOOST_TEST(held.count(name + "-gone") == 0u, node->port() << " " << name);
    }
  }
  // The bind made on b holds there.
  BOOST_TEST(bindings_seen(*n.b, "fresh-0", {"target k"}));
}

// A lookup of an exchange this member lacks first syncs with the log (it may have been declared
// on another member a moment ago), and a sync is an entry of the log. Lookups asked while one
// is under way share the next, so clients asking for missing names, however many, add fewer
// entries to the log than they make lookups.
BOOST_AUTO_TEST_CASE(lookups_of_a_missing_exchange_from_many_clients_share_their_syncs) {
  three_nodes n;
  auto applied_on_b = [&] {
    for (const auto& row : connect(*n.b)->list_nodes())
      if (row.local) return row.metadata_log_applied;
    return uint64_t{0};
  };
  auto before = applied_on_b();
  BOOST_REQUIRE(before > 0u);
  constexpr int clients = 20, lookups = 5;
  std::atomic<int> not_found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&] {
      auto conn = connect(*n.b);
      warren::client::exchange_options passive;
      passive.passive = true;
      for (int i = 0; i < lookups; ++i) {
        auto refused = refusal_of(
            [&] { conn->open_channel()->exchange_declare("nowhere", "direct", passive); });
        if (refused.find("NOT_FOUND") != std::string::npos) ++not_found;
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(not_found.load() == clients * lookups);
  auto entries = applied_on_b() - before;
  BOOST_TEST_MESSAGE(clients * lookups << " lookups added " << entries << " log entries");
  BOOST_TEST(entries >= 1u);  // they did sync
  BOOST_TEST(entries < uint64_t{clients * lookups});
}

// The upgrade path from a standalone node: the durable exchanges a node declared while it ran
// alone are in the log's first state (its seed) once it founds a cluster, so every member that
// joins has them, and a change made through another member reaches the founder through the log.
BOOST_AUTO_TEST_CASE(a_standalone_nodes_durable_exchanges_become_the_clusters_when_it_founds_one) {
  warren::test::temp_dir a_dir, b_dir;
  auto pa = warren::test::free_port(), pb = warren::test::free_port();
  {
    node_process alone({}, a_dir.path());
    auto conn = connect(alone);
    auto ch = conn->open_channel();
    ch->exchange_declare("from-alone", "topic", durable_exchange());
    ch->exchange_declare("gone-alone", "fanout", durable_exchange());
    ch->exchange_delete("gone-alone");
  }
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  auto b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)), b_dir.path());
  BOOST_REQUIRE(log_voters_seen(*a, {"a", "b"}));
  std::map<std::string, std::string> seeded{{"from-alone", "topic"}};
  BOOST_TEST((synced_exchanges(*b) == seeded));
  BOOST_TEST((synced_exchanges(*a) == seeded));
  connect(*b)->open_channel()->exchange_delete("from-alone");
  BOOST_TEST(synced_exchanges(*a).empty());
  // Restarted, the founder keeps what the log says, not what it held alone.
  a.reset();
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  BOOST_TEST(synced_exchanges(*a).empty());
}
