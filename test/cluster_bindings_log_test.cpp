// Bindings between durable exchanges through the metadata log, in real warren-node processes
// (issue 33): one made or removed on any member is so on every member once it synced, and
// routes there; a member restarted after changes it missed catches up; deleting an exchange
// takes the bindings from and to it on every member; a member without a majority refuses,
// naming the quorum, while its bindings stay as they were.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

using warren::test::node_process;
using namespace warren::test::cluster;

namespace {

// The bindings to exchanges in vhost "/" that `node` lists once it synced with the log:
// "source>destination key" each.
std::set<std::string> synced_exchange_bindings(const node_process& node) {
  auto conn = connect(node);
  conn->sync_metadata();
  std::set<std::string> out;
  for (const auto& b : conn->list_bindings())
    if (b.to_exchange && b.vhost == "/") out.insert(b.exchange + ">" + b.queue + " " + b.key);
  return out;
}

// Declares durable exchanges "src" (direct) and "dst" (fanout) through `node`.
void declare_both(const node_process& node) {
  auto conn = connect(node);
  auto ch = conn->open_channel();
  ch->exchange_declare("src", "direct", durable_exchange());
  ch->exchange_declare("dst", "fanout", durable_exchange());
}

// How many messages queue `queue` (bound to "dst") holds on `to` after `count` more were
// published to "src" with key `key` through `from`; each publish waits until every queue it
// was routed to has it.
size_t routed_through(const node_process& from, const node_process& to, const std::string& queue,
                      const std::string& key, int count) {
  auto conn = connect(from);
  auto ch = conn->open_channel();
  for (int i = 0; i < count; ++i) {
    warren::client::outbound_message m;
    m.exchange = "src";
    m.routing_key = key;
    m.body = "m" + std::to_string(i);
    ch->publish(m);
  }
  warren::client::queue_options passive;
  passive.passive = true;
  return connect(to)->open_channel()->queue_declare(queue, passive).message_count;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_binding_between_durable_exchanges_made_on_any_member_is_so_on_every_member) {
  three_nodes n;
  declare_both(*n.a);
  connect(*n.b)->open_channel()->exchange_bind("dst", "src", "k");
  // The server's own exchanges are in every vhost: a binding from one is the log's too.
  connect(*n.b)->open_channel()->exchange_bind("dst", "amq.topic", "t.#");
  std::set<std::string> bound{"src>dst k", "amq.topic>dst t.#"};
  for (auto* node : n.all()) BOOST_TEST((synced_exchange_bindings(*node) == bound), node->port());
  // It routes on a member that did not make it: a queue bound to "dst" on c gets what a
  // publisher on a sends to "src".
  warren::client::queue_options q;
  q.durable = true;
  auto c_conn = connect(*n.c);
  auto on_c = c_conn->open_channel();
  on_c->queue_declare("sink", q);
  on_c->queue_bind("sink", "dst", "");
  BOOST_TEST(routed_through(*n.a, *n.c, "sink", "k", 5) == 5u);
  // Bound again on another member: no change, no error. Unbound on a third: gone everywhere.
  connect(*n.c)->open_channel()->exchange_bind("dst", "src", "k");
  connect(*n.a)->open_channel()->exchange_unbind("dst", "src", "k");
  connect(*n.c)->open_channel()->exchange_unbind("dst", "amq.topic", "t.#");
  for (auto* node : n.all()) BOOST_TEST(synced_exchange_bindings(*node).empty(), node->port());
  BOOST_TEST(routed_through(*n.b, *n.c, "sink", "k", 5) == 5u);  // still the first five
  // Unbinding what is gone is not an error.
  connect(*n.b)->open_channel()->exchange_unbind("dst", "src", "k");
}

BOOST_AUTO_TEST_CASE(deleting_an_exchange_takes_its_bindings_to_and_from_exchanges_everywhere) {
  three_nodes n;
  declare_both(*n.a);
  auto conn = connect(*n.b);
  auto ch = conn->open_channel();
  ch->exchange_declare("third", "topic", durable_exchange());
  ch->exchange_bind("dst", "src", "k");
  ch->exchange_bind("third", "dst", "");
  ch->exchange_bind("dst", "third", "#");
  std::set<std::string> all{"src>dst k", "dst>third ", "third>dst #"};
  for (auto* node : n.all()) BOOST_TEST((synced_exchange_bindings(*node) == all), node->port());
  connect(*n.c)->open_channel()->exchange_delete("dst");
  for (auto* node : n.all()) BOOST_TEST(synced_exchange_bindings(*node).empty(), node->port());
  // Declared again, it has none of them.
  connect(*n.a)->open_channel()->exchange_declare("dst", "fanout", durable_exchange());
  for (auto* node : n.all()) BOOST_TEST(synced_exchange_bindings(*node).empty(), node->port());
}

BOOST_AUTO_TEST_CASE(a_member_restarted_after_binding_changes_it_missed_catches_up) {
  three_nodes n;
  declare_both(*n.a);
  auto conn = connect(*n.a);
  auto ch = conn->open_channel();
  ch->exchange_bind("dst", "src", "old");
  BOOST_REQUIRE((synced_exchange_bindings(*n.c) == std::set<std::string>{"src>dst old"}));
  n.c.reset();  // stopped
  ch->exchange_unbind("dst", "src", "old");
  ch->exchange_bind("dst", "src", "new");
  n.c = std::make_unique<node_process>(cluster_args("c", n.pc), n.c_dir.path());
  BOOST_TEST((synced_exchange_bindings(*n.c) == std::set<std::string>{"src>dst new"}));
}

BOOST_AUTO_TEST_CASE(a_member_without_a_majority_refuses_binding_changes_between_exchanges) {
  three_nodes n;
  declare_both(*n.a);
  connect(*n.a)->open_channel()->exchange_bind("dst", "src", "kept");
  BOOST_REQUIRE((synced_exchange_bindings(*n.a) == std::set<std::string>{"src>dst kept"}));
  n.b->kill9();
  n.c->kill9();
  BOOST_REQUIRE(sees(*n.a, {{"a", true}, {"b", false}, {"c", false}}));
  BOOST_REQUIRE(log_leader_seen(*n.a, ""));
  auto conn = connect(*n.a);
  for (const auto& refused :
       {refusal_of([&] { conn->open_channel()->exchange_bind("dst", "src", "lonely"); }),
        refusal_of([&] { conn->open_channel()->exchange_unbind("dst", "src", "kept"); })})
    BOOST_TEST(refused.find("no quorum: 1 of 3 members reachable") != std::string::npos, refused);
  std::set<std::string> listed;
  for (const auto& b : conn->list_bindings())
    if (b.to_exchange) listed.insert(b.exchange + ">" + b.queue + " " + b.key);
  BOOST_TEST((listed == std::set<std::string>{"src>dst kept"}));
}
