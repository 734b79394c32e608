// Clustering when members fail, with real warren-node processes on one machine: a member that was
// down catches up on what changed meanwhile (and brings nothing deleted back), and a queue's node
// killed with kill -9 during confirmed publishing through another node loses nothing confirmed.
#define BOOST_TEST_MODULE cluster_failover
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

using warren::test::free_port;
using warren::test::node_process;
using warren::test::temp_dir;
using namespace warren::test::cluster;

namespace {

warren::client::exchange_options durable_exchange() {
  warren::client::exchange_options o;
  o.durable = true;
  return o;
}

warren::client::queue_options durable_queue() {
  warren::client::queue_options o;
  o.durable = true;
  return o;
}

bool has_user_and_vhost(const names& users, const names& vhosts, const std::string& user,
                        const std::string& vhost) {
  return users.count(user) != 0 && vhosts.count(vhost) != 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_member_that_was_down_catches_up_and_brings_nothing_deleted_back) {
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir, b_dir;
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  auto b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)), b_dir.path());
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", true}}));
  {
    auto conn = connect(*a);
    auto ch = conn->open_channel();
    ch->queue_declare("orders", durable_queue());
    ch->exchange_declare("keep", "fanout", durable_exchange());
    ch->exchange_declare("gone", "direct", durable_exchange());
    ch->exchange_declare("shape", "direct", durable_exchange());
    ch->queue_bind("orders", "keep", "");
    ch->queue_bind("orders", "gone", "k");
    ch->queue_bind("orders", "shape", "s");
    conn->add_user("leaves", "x");
    conn->add_vhost("old");
  }
  BOOST_REQUIRE(bindings_seen(*b, "shape", {"orders s"}));
  BOOST_REQUIRE(access_seen(*b, [](const names& users, const names& vhosts, const names&) {
    return has_user_and_vhost(users, vhosts, "leaves", "old");
  }));

  // b is down while a changes exchanges, bindings, users and vhosts.
  b->kill9();
  b.reset();
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", false}}));
  {
    auto conn = connect(*a);
    auto ch = conn->open_channel();
    ch->exchange_delete("gone");
    ch->exchange_delete("shape");
    ch->exchange_declare("shape", "topic", durable_exchange());  // same name, another type
    ch->queue_bind("orders", "shape", "s.*");
    ch->exchange_declare("new", "topic", durable_exchange());
    ch->queue_bind("orders", "new", "x.#");
    ch->queue_bind("orders", "keep", "again");
    ch->queue_unbind("orders", "keep", "");
    conn->delete_user("leaves");
    conn->add_user("came", "y");
    conn->set_permissions({"came", "/", ".*", ".*", ".*"});
    conn->delete_vhost("old");
    conn->add_vhost("fresh");
  }

  // It comes back (its stored members, no --join) and takes what it missed, deletions included;
  // a gets none of what it deleted back from b.
  b = std::make_unique<node_process>(cluster_args("b", pb), b_dir.path());
  BOOST_REQUIRE(sees(*b, {{"a", true}, {"b", true}}));
  names exchanges{"keep:fanout", "new:topic", "shape:topic"};
  auto settled = [](const names& users, const names& vhosts, const names&) {
    return users == names{"came", "guest"} && vhosts == names{"/", "fresh"};
  };
  for (auto* n : {b.get(), a.get()}) {
    BOOST_CHECK(exchanges_seen(*n, exchanges));
    BOOST_CHECK(bindings_seen(*n, "keep", {"orders again"}));
    BOOST_CHECK(bindings_seen(*n, "shape", {"orders s.*"}));
    BOOST_CHECK(bindings_seen(*n, "new", {"orders x.#"}));
    BOOST_CHECK(bindings_seen(*n, "gone", {}));
    BOOST_CHECK(access_seen(*n, settled));
  }
  BOOST_CHECK(!logs_in(*b, "leaves", "x", "/"));
  BOOST_CHECK(eventually_logs_in(*b, "came", "y", "/"));

  // The other way round: a is down while b changes things; a takes them when it returns.
  a->kill9();
  a.reset();
  BOOST_REQUIRE(sees(*b, {{"a", false}, {"b", true}}));
  {
    auto conn = connect(*b);
    auto ch = conn->open_channel();
    ch->queue_declare("on-b", durable_queue());
    ch->exchange_declare("from-b", "direct", durable_exchange());
    ch->queue_bind("on-b", "from-b", "y");
    ch->queue_bind("on-b", "new", "y.#");
    ch->exchange_delete("keep");
    conn->add_vhost("b-made");
  }
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", true}}));
  for (auto* n : {a.get(), b.get()}) {
    BOOST_CHECK(exchanges_seen(*n, {"from-b:direct", "new:topic", "shape:topic"}));
    BOOST_CHECK(bindings_seen(*n, "new", {"orders x.#", "on-b y.#"}));
    BOOST_CHECK(bindings_seen(*n, "from-b", {"on-b y"}));
    BOOST_CHECK(access_seen(*n, [](const names& users, const names& vhosts, const names&) {
      return users == names{"came", "guest"} && vhosts == names{"/", "b-made", "fresh"};
    }));
  }

  // Routing on a follows what it took: a message for "new" reaches both queues.
  auto conn = connect(*a);
  auto ch = conn->open_channel();
  ch->confirm_select();
  warren::client::outbound_message m;
  m.exchange = "new";
  m.routing_key = "x.y.z";
  m.mandatory = true;
  BOOST_CHECK(ch->publish(m).outcome == warren::publish_outcome::routed);
}

namespace {

// Publishes numbered persistent messages through `ch` (confirm mode) in batches until `stop`,
// keeping the bodies the node confirmed; counts batches whose every message was refused.
struct confirmed_publisher {
  std::vector<std::string> confirmed;
  std::atomic<size_t> confirmed_count{0};
  std::atomic<int> refused_batches{0};
  std::atomic<bool> stop{false};
  bool hung = false;

  void run(warren::client::channel& ch, const std::string& queue) {
    for (int batch = 0; !stop; ++batch) {
      auto messages = numbered(queue, 20);
      for (size_t i = 0; i < messages.size(); ++i)
        messages[i].body = "p" + std::to_string(batch) + "-" + std::to_string(i);
      auto answer = ch.publish_batch(messages);
      // A confirm that never comes is the bug this guards against; a minute is not a speed test.
      if (answer.wait_for(std::chrono::minutes(1)) != std::future_status::ready) {
        hung = true;
        return;
      }
      auto results = answer.get();
      bool all_refused = true;
      for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].outcome == warren::publish_outcome::routed) {
          confirmed.push_back(messages[i].body);
          all_refused = false;
        }
      }
      confirmed_count = confirmed.size();
      if (all_refused) ++refused_batches;
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(kill_9_of_a_queues_node_during_confirmed_publishing_loses_nothing_confirmed) {
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir;
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  node_process b(cluster_args("b", pb, address(pa)));
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}}));
  connect(*a)->open_channel()->queue_declare("orders", durable_queue());
  BOOST_REQUIRE(home_seen(b, "orders", "a"));

  // A consumer through b that holds its deliveries unacked, and a publisher through b.
  auto consumer_conn = connect(b);
  auto consumer = consumer_conn->open_channel();
  consumer->qos(10);
  std::promise<std::string> cancelled;
  std::atomic<int> held{0};
  consumer->consume(
      "orders", {}, [&](const warren::client::delivery&) { ++held; },
      [&](const std::string&, const std::string& reason) { cancelled.set_value(reason); });
  auto publisher_conn = connect(b);
  auto publisher_ch = publisher_conn->open_channel();
  publisher_ch->confirm_select();
  confirmed_publisher publisher;
  std::thread publishing([&] { publisher.run(*publisher_ch, "orders"); });

  // a dies in the middle of it: the publisher goes on until its batches are refused.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (publisher.confirmed_count < 2000 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  a->kill9();
  a.reset();
  while (publisher.refused_batches < 5 && !publisher.hung &&
         std::chrono::steady_clock::now() < deadline + std::chrono::minutes(1))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  publisher.stop = true;
  publishing.join();
  BOOST_REQUIRE_MESSAGE(!publisher.hung, "a publish through b was never answered");
  BOOST_CHECK_GE(publisher.refused_batches.load(), 5);
  auto reason = cancelled.get_future();
  BOOST_REQUIRE(reason.wait_for(std::chrono::minutes(1)) == std::future_status::ready);
  BOOST_TEST_MESSAGE("consumer cancelled: " << reason.get() << "; it held " << held.load());

  // a comes back with every confirmed message (the ones the consumer held included).
  node_process a_again(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}}));
  auto reader_conn = connect(b);
  auto reader = reader_conn->open_channel();
  std::set<std::string> stored;
  while (auto d = reader->get("orders", true)) stored.insert(d->body);
  size_t lost = 0;
  for (const auto& body : publisher.confirmed) lost += stored.count(body) == 0;
  BOOST_TEST_MESSAGE(publisher.confirmed.size()
                     << " confirmed, " << stored.size() << " back after the restart");
  BOOST_CHECK_GE(publisher.confirmed.size(), 2000u);
  BOOST_CHECK_EQUAL(lost, 0u);
}
