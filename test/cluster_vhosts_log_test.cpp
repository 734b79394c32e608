// Vhosts and their limits through the metadata log, in real warren-node processes (issue 33): a
// vhost added or deleted on any member is so on every member, with its creator's permissions;
// what is declared in a new vhost reaches every member, also one whose log applies the vhost
// after it hears of the declaration; a vhost deleted and added again comes back empty; limits
// written through different members end the same everywhere; and a member without a majority
// refuses all of these, naming the quorum.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

using warren::test::free_port;
using warren::test::node_process;
using warren::test::temp_dir;
using namespace warren::test::cluster;

namespace {

std::unique_ptr<warren::client::connection> connect_to(const node_process& node,
                                                       const std::string& vhost) {
  warren::client::connect_options o;
  o.port = node.port();
  o.vhost = vhost;
  return warren::client::connection::open(o);
}

// The vhosts `node` lists once it synced with the log.
names synced_vhosts(const node_process& node) {
  auto conn = connect(node);
  conn->sync_metadata();
  auto listed = conn->list_vhosts();
  return names(listed.begin(), listed.end());
}

bool lists_queue(const node_process& node, const std::string& vhost, const std::string& queue) {
  auto listed = connect_to(node, vhost)->list_queues();
  return std::any_of(listed.begin(), listed.end(),
                     [&](const warren::client::queue_row& q) { return q.name == queue; });
}

// The exchanges of `vhost` on `node` that are not built in; polled until they are `expected`.
bool exchanges_in_seen(const node_process& node, const std::string& vhost, const names& expected) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  names seen;
  while (std::chrono::steady_clock::now() < deadline) {
    seen.clear();
    try {
      for (const auto& e : connect_to(node, vhost)->list_exchanges())
        if (!e.name.empty() && e.name.rfind("amq.", 0) != 0) seen.insert(e.name);
    } catch (const std::exception&) {
      seen.clear();  // the vhost is not there (yet)
    }
    if (seen == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST_MESSAGE("port " << node.port() << " has " << seen.size() << " exchange(s) in "
                             << vhost);
  return false;
}

}  // namespace

// Added on each member in turn: every member lists it once synced, and its creator (guest) may
// use it everywhere. Deleted on another member: gone everywhere, with the queue made in it.
BOOST_AUTO_TEST_CASE(a_vhost_made_or_deleted_on_any_member_is_so_on_every_member) {
  three_nodes n;
  for (auto* made_on : n.all()) {
    auto vhost = "v" + std::to_string(made_on->port());
    connect(*made_on)->add_vhost(vhost);
    for (auto* node : n.all()) {
      BOOST_TEST(synced_vhosts(*node).count(vhost) == 1u, vhost << " on port " << node->port());
      BOOST_TEST(eventually_logs_in(*node, "guest", "guest", vhost));
    }
  }
  auto doomed = "v" + std::to_string(n.a->port());
  connect_to(*n.a, doomed)->open_channel()->queue_declare("inside", {});
  connect(*n.c)->delete_vhost(doomed);
  for (auto* node : n.all()) BOOST_TEST(synced_vhosts(*node).count(doomed) == 0u);
  BOOST_TEST(!logs_in(*n.a, "guest", "guest", doomed));
  // Made again: without the old queue on every member, its record gone with the old vhost.
  connect(*n.b)->add_vhost(doomed);
  for (auto* node : n.all()) {
    BOOST_REQUIRE(eventually_logs_in(*node, "guest", "guest", doomed));
    BOOST_TEST(!lists_queue(*node, doomed, "inside"), "port " << node->port());
  }
  n.a.reset();
  n.a = std::make_unique<node_process>(cluster_args("a", n.pa), n.a_dir.path());
  BOOST_REQUIRE(eventually_logs_in(*n.a, "guest", "guest", doomed));
  BOOST_TEST(!lists_queue(*n.a, doomed, "inside"), "came back after a restart");
  // A name no vhost can have (LMDB keys stop at 511 bytes) is not there: not a log entry that
  // every member skips while its maker is told it was done.
  std::string too_long(600, 'v');
  for (const auto& refused :
       {refusal_of([&] { connect(*n.b)->delete_vhost(too_long); }), refusal_of([&] {
          connect(*n.c)->set_vhost_limits(too_long, {-1, 3});
        })})
    BOOST_TEST(refused.find("no vhost") != std::string::npos, refused);
}

// A vhost made on one member and at once used there: the other members hear of its exchanges
// perhaps before their logs apply the vhost, and must not drop them.
BOOST_AUTO_TEST_CASE(what_is_declared_in_a_new_vhost_reaches_every_member) {
  three_nodes n;
  for (int round = 0; round < 5; ++round) {
    for (auto* made_on : n.all()) {
      auto vhost = "fresh-" + std::to_string(round) + "-" + std::to_string(made_on->port());
      connect(*made_on)->add_vhost(vhost);
      connect_to(*made_on, vhost)->open_channel()->exchange_declare("x", "fanout");
      for (auto* node : n.all())
        BOOST_TEST(exchanges_in_seen(*node, vhost, {"x"}), vhost << " on port " << node->port());
    }
  }
}

// One register, written through each member in turn: once synced, every member reads the last
// value written, and each write is read back at once where it was made.
BOOST_AUTO_TEST_CASE(limits_written_through_different_members_end_the_same_everywhere) {
  three_nodes n;
  connect(*n.a)->add_vhost("limited");
  int64_t value = 0;
  for (int round = 0; round < 3; ++round)
    for (auto* writer : n.all()) {
      value = 100 + round * 10 + static_cast<int64_t>(writer->port() % 7);
      auto conn = connect(*writer);
      conn->set_vhost_limits("limited", {-1, value});
      BOOST_TEST(conn->get_vhost_limits("limited").max_queues == value);
      for (auto* reader : n.all()) {
        auto r = connect(*reader);
        r->sync_metadata();
        BOOST_TEST(r->get_vhost_limits("limited").max_queues == value,
                   "port " << reader->port() << " after a write on port " << writer->port());
      }
    }
  // The limit holds on a member other than the writer.
  connect(*n.b)->set_vhost_limits("limited", {-1, 1});
  auto c = connect_to(*n.c, "limited");
  c->sync_metadata();
  auto ch = c->open_channel();
  ch->queue_declare("first", {});
  auto refused = refusal_of([&] { c->open_channel()->queue_declare("second", {}); });
  BOOST_TEST(refused.find("queue limit") != std::string::npos, refused);
}

// Two of three members killed: the one left refuses vhost changes, naming the quorum, and its
// vhosts stay as they were.
BOOST_AUTO_TEST_CASE(a_member_without_a_majority_refuses_vhost_changes) {
  three_nodes n;
  connect(*n.a)->add_vhost("kept");
  n.b->kill9();
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", false}, {"c", false}}));
  BOOST_REQUIRE(log_leader_seen(*n.a, ""));
  auto conn = connect(*n.a);
  for (const auto& refused : {refusal_of([&] { conn->add_vhost("lonely"); }),
                              refusal_of([&] { conn->delete_vhost("kept"); }), refusal_of([&] {
                                conn->set_vhost_limits("kept", {5, 5});
                              })})
    BOOST_TEST(refused.find("no quorum: 1 of 3 members reachable") != std::string::npos, refused);
  auto listed = conn->list_vhosts();
  BOOST_TEST((std::count(listed.begin(), listed.end(), "kept") == 1));
  BOOST_TEST((std::count(listed.begin(), listed.end(), "lonely") == 0));
  BOOST_TEST(conn->get_vhost_limits("kept").max_queues == -1);
}
