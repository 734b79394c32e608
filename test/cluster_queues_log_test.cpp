// Durable queues' names through the metadata log, in real warren-node processes (issue 33): a
// member without a majority refuses to declare or delete one, naming the quorum; two members
// declaring one name at once end with one queue; and members restarted while a queue's home is
// down still know the name is taken, so no second queue of it is made.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

using warren::test::node_process;
using namespace warren::test::cluster;

namespace {

// A connection to `node` once it applied what the log committed. Members just restarted may
// have no leader yet (a sync then fails with no quorum): asked again for a minute, a guard
// against a hung test, not a speed expectation.
std::unique_ptr<warren::client::connection> synced(const node_process& node) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (;;) {
    try {
      auto conn = connect(node);
      conn->sync_metadata();
      return conn;
    } catch (const std::exception&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

// The rows named `queue` that `node` lists, by the node each lives on, once it synced.
std::map<std::string, int> copies_of(const node_process& node, const std::string& queue) {
  auto conn = synced(node);
  std::map<std::string, int> out;
  for (const auto& q : conn->list_queues())
    if (q.name == queue) ++out[q.node];
  return out;
}

// Polls until `node` lists `queue` as working (not "its node is down" or "not reachable").
bool reachable_on(const node_process& node, const std::string& queue) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& q : connect(node)->list_queues())
      if (q.name == queue && q.unavailable.empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Declares `name` on two members at once, with the options of each; what each refusal said
// ("" for none).
std::pair<std::string, std::string> declare_at_once(const node_process& x,
                                                    const warren::client::queue_options& on_x,
                                                    const node_process& y,
                                                    const warren::client::queue_options& on_y,
                                                    const std::string& name) {
  std::string refused_on_x, refused_on_y;
  auto declare = [&](const node_process& node, const warren::client::queue_options& options,
                     std::string& refused) {
    refused = refusal_of([&] { connect(node)->open_channel()->queue_declare(name, options); });
  };
  std::thread first([&] { declare(x, on_x, refused_on_x); });
  std::thread second([&] { declare(y, on_y, refused_on_y); });
  first.join();
  second.join();
  return {refused_on_x, refused_on_y};
}

}  // namespace

// Before, a lone member created a durable queue: the members it asked for the name were those
// it could reach, that is none.
BOOST_AUTO_TEST_CASE(a_member_without_a_majority_refuses_to_declare_or_delete_a_durable_queue) {
  three_nodes n;
  auto conn = connect(*n.a);
  auto channel = conn->open_channel();
  channel->queue_declare("kept", durable_queue());
  warren::client::outbound_message m;
  m.routing_key = "kept";
  m.body = "body";
  channel->publish(m);
  n.b->kill9();
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", false}, {"c", false}}));
  BOOST_REQUIRE(log_leader_seen(*n.a, ""));
  auto on_a = connect(*n.a);
  for (const auto& refused :
       {refusal_of([&] { on_a->open_channel()->queue_declare("lonely", durable_queue()); }),
        refusal_of([&] { on_a->open_channel()->queue_delete("kept"); })})
    BOOST_TEST(refused.find("no quorum: 1 of 3 members reachable") != std::string::npos, refused);
  std::map<std::string, uint64_t> listed;
  for (const auto& q : on_a->list_queues()) listed[q.name] = q.messages_ready;
  BOOST_TEST((listed == std::map<std::string, uint64_t>{{"kept", 1}}));
  // A transient queue is this node's own: it is still made.
  BOOST_TEST(refusal_of([&] { on_a->open_channel()->queue_declare("scratch"); }).empty());
}

BOOST_AUTO_TEST_CASE(two_members_declaring_one_durable_queue_at_once_end_with_one_queue) {
  three_nodes n;
  constexpr int rounds = 10;
  for (int i = 0; i < rounds; ++i) {
    auto name = "q" + std::to_string(i);
    auto at_most = [](int32_t max_length) {
      auto options = durable_queue();
      options.arguments = {{"x-max-length", warren::field_value::of_int(max_length)}};
      return options;
    };
    auto [refused_on_a, refused_on_b] = declare_at_once(*n.a, at_most(10), *n.b, at_most(20), name);
    BOOST_TEST_MESSAGE(name << " a: " << refused_on_a << "; b: " << refused_on_b);
    BOOST_TEST((refused_on_a.empty() != refused_on_b.empty()), name);
    auto refused = refused_on_a.empty() ? refused_on_b : refused_on_a;
    BOOST_TEST(refused.find("PRECONDITION_FAILED") != std::string::npos, refused);
    auto home = refused_on_a.empty() ? "a" : "b";
    for (auto* node : n.all())
      BOOST_TEST((copies_of(*node, name) == std::map<std::string, int>{{home, 1}}),
                 node->port() << " " << name);
  }
}

// Before, what a member knew of another's queues was in memory only: members restarted while a
// queue's home was down forgot it, and a declare of its name on them made a second queue.
BOOST_AUTO_TEST_CASE(members_restarted_while_a_queues_home_is_down_make_no_second_queue) {
  three_nodes n;
  connect(*n.b)->open_channel()->queue_declare("held", durable_queue());
  BOOST_REQUIRE(home_seen(*n.a, "held", "b"));
  n.b->kill9();
  n.a.reset();
  n.c.reset();
  n.a = std::make_unique<node_process>(cluster_args("a", n.pa), n.a_dir.path());
  n.c = std::make_unique<node_process>(cluster_args("c", n.pc), n.c_dir.path());
  auto on_c = synced(*n.c);
  auto refused = refusal_of([&] { on_c->open_channel()->queue_declare("held", durable_queue()); });
  BOOST_TEST(refused.find("lives on node b") != std::string::npos, refused);
  // Listed where it lives, as not reachable.
  BOOST_TEST((copies_of(*n.a, "held") == std::map<std::string, int>{{"b", 1}}));
  n.b = std::make_unique<node_process>(cluster_args("b", n.pb), n.b_dir.path());
  BOOST_TEST(reachable_on(*n.c, "held"));
  for (auto* node : n.all())
    BOOST_TEST((copies_of(*node, "held") == std::map<std::string, int>{{"b", 1}}), node->port());
}

BOOST_AUTO_TEST_CASE(a_durable_queue_deleted_through_a_member_is_gone_and_its_name_free) {
  three_nodes n;
  connect(*n.b)->open_channel()->queue_declare("once", durable_queue());
  BOOST_REQUIRE(home_seen(*n.c, "once", "b"));
  connect(*n.c)->open_channel()->queue_delete("once");
  for (auto* node : n.all()) BOOST_TEST(copies_of(*node, "once").empty(), node->port());
  connect(*n.c)->open_channel()->queue_declare("once", durable_queue());
  for (auto* node : n.all())
    BOOST_TEST((copies_of(*node, "once") == std::map<std::string, int>{{"c", 1}}), node->port());
  // The home deleted its own record too: restarted, it does not bring the queue back.
  n.b.reset();
  n.b = std::make_unique<node_process>(cluster_args("b", n.pb), n.b_dir.path());
  BOOST_TEST((copies_of(*n.b, "once") == std::map<std::string, int>{{"c", 1}}));
}

// The upgrade path: durable queues a node declared while it ran alone are proposed to the log
// once it founds a cluster, homed on it (a node joining one must come empty: cluster_test). So
// members restarted while it is down still know them, and none of their messages is lost.
BOOST_AUTO_TEST_CASE(queues_a_node_held_before_it_founded_the_cluster_become_the_logs) {
  warren::test::temp_dir a_dir, b_dir, c_dir;
  auto pa = warren::test::free_port(), pb = warren::test::free_port();
  auto pc = warren::test::free_port();
  {
    node_process alone({}, a_dir.path());
    auto conn = connect(alone);
    auto ch = conn->open_channel();
    for (const auto* name : {"from-a", "also-from-a"}) {
      ch->queue_declare(name, durable_queue());
      warren::client::outbound_message m;
      m.routing_key = name;
      m.body = "kept";
      m.properties.persistent = true;
      ch->publish(m);
    }
  }
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  auto b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)), b_dir.path());
  auto c = std::make_unique<node_process>(cluster_args("c", pc, address(pa)), c_dir.path());
  BOOST_REQUIRE(log_voters_seen(*a, {"a", "b", "c"}));
  BOOST_REQUIRE(home_seen(*c, "from-a", "a"));
  // With a down and both others restarted, they still know from-a lives on a.
  a->kill9();
  b.reset();
  c.reset();
  b = std::make_unique<node_process>(cluster_args("b", pb, address(pc)), b_dir.path());
  c = std::make_unique<node_process>(cluster_args("c", pc, address(pb)), c_dir.path());
  auto on_c = synced(*c);
  auto refused =
      refusal_of([&] { on_c->open_channel()->queue_declare("from-a", durable_queue()); });
  BOOST_TEST(refused.find("lives on node a") != std::string::npos, refused);
  BOOST_TEST((copies_of(*b, "also-from-a") == std::map<std::string, int>{{"a", 1}}));
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(reachable_on(*c, "from-a"));
  warren::client::queue_options passive;
  passive.passive = true;
  for (const auto* name : {"from-a", "also-from-a"})
    BOOST_TEST(connect(*c)->open_channel()->queue_declare(name, passive).message_count == 1u, name);
}

// Declared alike on two members at once: both are answered declare-ok, for the one queue, also
// the member whose entry lost (it has not had the winner's placement yet when it answers).
BOOST_AUTO_TEST_CASE(two_members_declaring_one_durable_queue_alike_both_get_it) {
  three_nodes n;
  constexpr int rounds = 10;
  for (int i = 0; i < rounds; ++i) {
    auto name = "alike" + std::to_string(i);
    auto [refused_on_a, refused_on_c] =
        declare_at_once(*n.a, durable_queue(), *n.c, durable_queue(), name);
    BOOST_TEST(refused_on_a.empty(), refused_on_a);
    BOOST_TEST(refused_on_c.empty(), refused_on_c);
    auto copies = copies_of(*n.b, name);
    BOOST_TEST(copies.size() == 1u, name);
    for (auto* node : n.all()) BOOST_TEST((copies_of(*node, name) == copies), node->port());
  }
}

// A node forgotten (forget-node) is gone for good, and so are its queues: their names are
// released through the log, so they can be declared again on a member.
BOOST_AUTO_TEST_CASE(a_forgotten_nodes_durable_queue_names_are_released) {
  three_nodes n;
  connect(*n.c)->open_channel()->queue_declare("on-c", durable_queue());
  BOOST_REQUIRE(home_seen(*n.a, "on-c", "c"));
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", true}, {"c", false}}));
  connect(*n.a)->forget_node("c");
  // Each member proposes the release as it forgets c, a moment after the answer.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!copies_of(*n.b, "on-c").empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  BOOST_TEST((copies_of(*n.b, "on-c").empty()));
  BOOST_TEST(refusal_of([&] {
               connect(*n.b)->open_channel()->queue_declare("on-c", durable_queue());
             }).empty());
  for (auto* node : {n.a.get(), n.b.get()})
    BOOST_TEST((copies_of(*node, "on-c") == std::map<std::string, int>{{"b", 1}}), node->port());
}
