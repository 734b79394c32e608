// Clustering when members fail, with real warren-node processes on one machine: a member that was
// down catches up on what changed meanwhile (and brings nothing deleted back), a queue's node
// killed with kill -9 during confirmed publishing through another node loses nothing confirmed,
// and nodes in two network namespaces agree again after the link between them was cut.
#include "cluster_nodes.hpp"
#include "network_namespaces.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <optional>
#include <random>
#include <thread>

using warren::test::free_port;
using warren::test::namespace_net;
using warren::test::node_process;
using warren::test::temp_dir;
using namespace warren::test::cluster;

namespace {

bool has_user_and_vhost(const names& users, const names& vhosts, const std::string& user,
                        const std::string& vhost) {
  return users.count(user) != 0 && vhosts.count(vhost) != 0;
}

// Through a, while both run: a queue bound to three exchanges, a user and a vhost.
void define_first_topology_and_access(node_process& a) {
  auto conn = connect(a);
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

// Through a, while b is down: bindings added and removed. Durable exchanges, users,
// permissions and so vhosts (their permissions) go through the metadata log, which two nodes
// keep only together: a alone refuses them (and the test waited until a knew it had no leader,
// so that no change is left of unknown outcome).
void change_everything_while_b_is_down(node_process& a) {
  auto conn = connect(a);
  conn->open_channel()->queue_bind("orders", "keep", "again");
  conn->open_channel()->queue_unbind("orders", "keep", "");
  for (auto refused :
       {refusal_of([&] { conn->open_channel()->exchange_delete("gone"); }), refusal_of([&] {
          conn->open_channel()->exchange_declare("new", "topic", durable_exchange());
        }),
        refusal_of([&] { conn->delete_user("leaves"); }),
        refusal_of([&] { conn->add_user("came", "y"); }),
        refusal_of([&] { conn->delete_vhost("old"); }),
        refusal_of([&] { conn->add_vhost("fresh"); })})
    BOOST_TEST(refused.find("no quorum: 1 of 2 members reachable") != std::string::npos, refused);
}

// Through a once b is back: the changes the log refused while b was down (exchanges deleted,
// one declared again with another type, a new one), and bindings to the new exchanges.
void change_what_the_log_refused(node_process& a) {
  auto conn = connect(a);
  auto ch = conn->open_channel();
  ch->exchange_delete("gone");
  ch->exchange_delete("shape");
  ch->exchange_declare("shape", "topic", durable_exchange());  // same name, another type
  ch->queue_bind("orders", "shape", "s.*");
  ch->exchange_declare("new", "topic", durable_exchange());
  ch->queue_bind("orders", "new", "x.#");
  conn->delete_user("leaves");
  conn->add_user("came", "y");
  conn->set_permissions({"came", "/", ".*", ".*", ".*"});
  conn->delete_vhost("old");
  conn->add_vhost("fresh");
}

// `n` sees what a changed while b was down, deletions included.
void expect_what_a_changed(node_process& n) {
  names exchanges{"keep:fanout", "new:topic", "shape:topic"};
  auto settled = [](const names& users, const names& vhosts, const names&) {
    return users == names{"came", "guest"} && vhosts == names{"/", "fresh"};
  };
  BOOST_CHECK(exchanges_seen(n, exchanges));
  BOOST_CHECK(bindings_seen(n, "keep", {"orders again"}));
  BOOST_CHECK(bindings_seen(n, "shape", {"orders s.*"}));
  BOOST_CHECK(bindings_seen(n, "new", {"orders x.#"}));
  BOOST_CHECK(bindings_seen(n, "gone", {}));
  BOOST_CHECK(access_seen(n, settled));
}

// Through b, while a is down: a durable queue, an exchange, its delete and a vhost are refused
// (b alone is no majority of the metadata log).
void change_things_while_a_is_down(node_process& b) {
  auto conn = connect(b);
  for (auto refused :
       {refusal_of([&] { conn->open_channel()->queue_declare("on-b", durable_queue()); }),
        refusal_of([&] {
          conn->open_channel()->exchange_declare("from-b", "direct", durable_exchange());
        }),
        refusal_of([&] { conn->open_channel()->exchange_delete("keep"); }),
        refusal_of([&] { conn->add_vhost("b-made"); })})
    BOOST_TEST(refused.find("no quorum: 1 of 2 members reachable") != std::string::npos, refused);
}

// Through b once a is back: what the log refused while a was down, a queue of its own with a
// binding to a's "new" among them.
void change_what_b_could_not(node_process& b) {
  auto conn = connect(b);
  auto ch = conn->open_channel();
  ch->queue_declare("on-b", durable_queue());
  ch->queue_bind("on-b", "new", "y.#");
  ch->exchange_declare("from-b", "direct", durable_exchange());
  ch->queue_bind("on-b", "from-b", "y");
  ch->exchange_delete("keep");
  conn->add_vhost("b-made");
}

// `n` sees what b changed while a was down.
void expect_what_b_changed(node_process& n) {
  BOOST_CHECK(exchanges_seen(n, {"from-b:direct", "new:topic", "shape:topic"}));
  BOOST_CHECK(bindings_seen(n, "new", {"orders x.#", "on-b y.#"}));
  BOOST_CHECK(bindings_seen(n, "from-b", {"on-b y"}));
  BOOST_CHECK(access_seen(n, [](const names& users, const names& vhosts, const names&) {
    return users == names{"came", "guest"} && vhosts == names{"/", "b-made", "fresh"};
  }));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_member_that_was_down_catches_up_and_brings_nothing_deleted_back) {
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir, b_dir;
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  auto b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)), b_dir.path());
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", true}}));
  define_first_topology_and_access(*a);
  BOOST_REQUIRE(bindings_seen(*b, "shape", {"orders s"}));
  BOOST_REQUIRE(access_seen(*b, [](const names& users, const names& vhosts, const names&) {
    return has_user_and_vhost(users, vhosts, "leaves", "old");
  }));

  // b is down while a changes exchanges, bindings, users and vhosts.
  b->kill9();
  b.reset();
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", false}}));
  BOOST_REQUIRE(log_leader_seen(*a, ""));
  change_everything_while_b_is_down(*a);

  // It comes back (its stored members, no --join) and takes what it missed, deletions included;
  // a gets none of what it deleted back from b. With b back, the log takes user changes again.
  b = std::make_unique<node_process>(cluster_args("b", pb), b_dir.path());
  BOOST_REQUIRE(sees(*b, {{"a", true}, {"b", true}}));
  BOOST_CHECK(access_seen(*a, [](const names& users, const names& vhosts, const names&) {
    return users == names{"guest", "leaves"} && vhosts == names{"/", "old"};
  }));
  change_what_the_log_refused(*a);
  for (auto* n : {b.get(), a.get()}) expect_what_a_changed(*n);
  BOOST_CHECK(!logs_in(*b, "leaves", "x", "/"));
  BOOST_CHECK(eventually_logs_in(*b, "came", "y", "/"));

  // The other way round: a is down while b changes things; a takes them when it returns.
  a->kill9();
  a.reset();
  BOOST_REQUIRE(sees(*b, {{"a", false}, {"b", true}}));
  BOOST_REQUIRE(log_leader_seen(*b, ""));
  change_things_while_a_is_down(*b);
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(sees(*a, {{"a", true}, {"b", true}}));
  change_what_b_could_not(*b);
  for (auto* n : {a.get(), b.get()}) expect_what_b_changed(*n);

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

  // Up to `window` batches in flight: the next one leaves before the last is answered, as a
  // busy publisher's do.
  void run(warren::client::channel& ch, const std::string& queue, size_t window = 1) {
    using answer = std::future<std::vector<warren::client::publish_result>>;
    std::deque<std::pair<answer, std::vector<warren::client::outbound_message>>> in_flight;
    for (int batch = 0; !stop || !in_flight.empty(); ++batch) {
      if (!stop && in_flight.size() < window) {
        auto messages = numbered(queue, 20);
        for (size_t i = 0; i < messages.size(); ++i)
          messages[i].body = "p" + std::to_string(batch) + "-" + std::to_string(i);
        auto sent = ch.publish_batch(messages);
        in_flight.emplace_back(std::move(sent), std::move(messages));
        continue;
      }
      auto& [sent, messages] = in_flight.front();
      // A confirm that never comes is the bug this guards against; a minute is not a speed test.
      if (sent.wait_for(std::chrono::minutes(1)) != std::future_status::ready) {
        hung = true;
        return;
      }
      take(sent.get(), messages);
      in_flight.pop_front();
    }
  }

 private:
  void take(const std::vector<warren::client::publish_result>& results,
            const std::vector<warren::client::outbound_message>& messages) {
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

// A non-durable queue dies with its node. When the node is back, both members must know it is
// gone: a declare of the name, through either node, makes a fresh queue instead of answering
// "lives on node a, which is down", and no listing keeps the dead one.
BOOST_AUTO_TEST_CASE(a_transient_queue_of_a_killed_node_is_gone_when_the_node_is_back) {
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir;
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  node_process b(cluster_args("b", pb, address(pa)));
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}}));
  {
    auto conn = connect(*a);
    auto ch = conn->open_channel();
    ch->queue_declare("scratch-1", {});
    ch->queue_declare("scratch-2", {});
    ch->queue_declare("kept", durable_queue());
  }
  BOOST_REQUIRE(home_seen(b, "scratch-1", "a"));
  BOOST_REQUIRE(home_seen(b, "kept", "a"));

  a->kill9();
  a.reset();
  BOOST_REQUIRE(sees(b, {{"a", false}, {"b", true}}));
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}}));
  BOOST_REQUIRE(home_seen(b, "kept", "a"));

  // Gone from b's listing, then declared afresh through b and through a.
  BOOST_CHECK(home_seen(b, "scratch-1", ""));
  BOOST_CHECK(home_seen(b, "scratch-2", ""));
  auto b_conn = connect(b);
  auto through_b = b_conn->open_channel();
  BOOST_CHECK_NO_THROW(through_b->queue_declare("scratch-1", {}));
  BOOST_CHECK(home_seen(*a, "scratch-1", "b"));
  auto a_conn = connect(*a);
  auto through_a = a_conn->open_channel();
  BOOST_CHECK_NO_THROW(through_a->queue_declare("scratch-2", {}));
  BOOST_CHECK(home_seen(b, "scratch-2", "a"));
  auto nodes = warrenctl_json(b, {"list", "nodes"});
  for (const auto& row : nodes)
    if (row["name"] == "a") BOOST_CHECK_EQUAL(row["queues"].get<int>(), 2);  // kept, scratch-2
}

// A publish routed while the queue's node is going down must still be answered: the member's
// loss reaches publishers and exchanges at different moments, and a message sent into the gap
// went to a dead node and waited for ever. The node is killed at a random moment of confirmed
// publishing from two channels, round after round; no confirm may be left waiting.
BOOST_AUTO_TEST_CASE(every_publish_is_answered_when_the_queues_node_dies_at_any_moment) {
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir;
  node_process b(cluster_args("b", pb));
  std::mt19937 random(std::random_device{}());
  for (int round = 0; round < 8; ++round) {
    node_process a(cluster_args("a", pa, round == 0 ? address(pb) : ""), a_dir.path());
    BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}}));
    if (round == 0) connect(a)->open_channel()->queue_declare("orders", durable_queue());
    BOOST_REQUIRE(home_seen(b, "orders", "a"));

    auto conn = connect(b);
    std::array<std::unique_ptr<warren::client::channel>, 2> channels;
    std::array<confirmed_publisher, 2> publishers;
    std::vector<std::thread> publishing;
    for (size_t i = 0; i < channels.size(); ++i) {
      channels[i] = conn->open_channel();
      channels[i]->confirm_select();
      publishing.emplace_back([&, i] { publishers[i].run(*channels[i], "orders", 8); });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 500));
    a.kill9();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    auto refused = [&] {
      for (auto& p : publishers)
        if (p.refused_batches < 3 && !p.hung) return false;
      return true;
    };
    while (!refused() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (auto& p : publishers) p.stop = true;
    for (auto& t : publishing) t.join();
    for (auto& p : publishers) {
      BOOST_REQUIRE_MESSAGE(!p.hung,
                            "round " << round << ": a publish through b was never answered");
      BOOST_CHECK_GE(p.refused_batches.load(), 3);
    }
    BOOST_TEST_MESSAGE("round " << round << ": " << publishers[0].confirmed_count << " + "
                                << publishers[1].confirmed_count << " confirmed before the kill");
    BOOST_REQUIRE(sees(b, {{"a", false}, {"b", true}}));
  }
}

namespace {

// warrenctl --json run inside namespace `i` against the node there; nullopt when it fails.
// warrenctl in a namespace reaches the node over the bridge, where guest may not log in: an
// administrator "ops" is made first, on a standalone start of the data dir.
void seed_ops_user(const std::string& data_dir) {
  node_process seeding({}, data_dir);
  auto conn = connect(seeding);
  conn->add_user("ops", "ops-secret", {"administrator"});
  conn->set_permissions({"ops", "/", ".*", ".*", ".*"});
}

std::optional<json> try_ctl_in(const namespace_net& net, int i, const node_process& node,
                               std::vector<std::string> args, std::string* error = nullptr) {
  auto argv = net.inside(i);
  // guest may only log in over loopback, so the test logs in as an administrator of its own.
  argv.insert(argv.end(),
              {WARRENCTL_PATH, "--host", net.address(i), "--port", std::to_string(node.port()),
               "--user", "ops", "--password", "ops-secret", "--json"});
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = warren::test::run_command(argv);
  if (r.exit_code != 0) {
    if (error != nullptr) *error = r.err;
    return std::nullopt;
  }
  return r.out.empty() ? json{} : json::parse(r.out);
}

json ctl_in(const namespace_net& net, int i, const node_process& node,
            std::vector<std::string> args) {
  std::string error;
  auto out = try_ctl_in(net, i, node, std::move(args), &error);
  BOOST_REQUIRE_MESSAGE(out.has_value(), "warrenctl failed: " << error);
  return *out;
}

// Polls until `check(rows of warrenctl list WHAT)` holds for the node in namespace `i`. A node
// that joined learns the administrator "ops" from the metadata log shortly after it runs, so a
// refused login is tried again.
template <class Check>
bool listed_in(const namespace_net& net, int i, const node_process& node, const std::string& what,
               Check check) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto rows = try_ctl_in(net, i, node, {"list", what}); rows && check(*rows)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  BOOST_TEST_MESSAGE("last listed: " << ctl_in(net, i, node, {"list", what}).dump());
  return false;
}

auto other_running(const std::string& name, bool running) {
  return [=](const json& rows) {
    for (const auto& r : rows)
      if (r["name"] == name) return r["running"].get<bool>() == running;
    return false;
  };
}

auto split_exchanges(const names& expected) {
  return [=](const json& rows) {
    names seen;
    for (const auto& r : rows)
      if (r["name"].get<std::string>().rfind("split-", 0) == 0) seen.insert(r["name"]);
    return seen == expected;
  };
}

}  // namespace

namespace {

bool namespaces_usable(boost::unit_test::test_unit_id) {
  return warren::test::network_namespaces_usable();
}

// Members a and b, each in a network namespace of its own (10.213.x), b joined to a, both
// running; a's data dir holds the administrator warrenctl logs in as over the bridge.
struct namespaced_pair {
  namespace_net net{2, 213};
  uint16_t pa = free_port(), pb = free_port();
  temp_dir a_dir;
  std::unique_ptr<node_process> a, b;

  namespaced_pair() {
    BOOST_REQUIRE_MESSAGE(net.usable(), "could not make the network namespaces");
    seed_ops_user(a_dir.path());
    a = std::make_unique<node_process>(in_ns(0, cluster_args("a", pa)), a_dir.path(),
                                       net.inside(0));
    auto join = net.address(0) + ":" + std::to_string(pa);
    b = std::make_unique<node_process>(in_ns(1, cluster_args("b", pb, join)), std::string(),
                                       net.inside(1));
    BOOST_REQUIRE(listed_in(net, 0, *a, "nodes", other_running("b", true)));
  }

  std::vector<std::string> in_ns(int i, std::vector<std::string> args) const {
    args.insert(args.end(), {"--bind", net.address(i), "--cluster-bind", net.address(i)});
    return args;
  }
};

}  // namespace

// Nodes in two network namespaces: the link between them is cut (no socket closes; CAF's
// heartbeat notices), each side goes on alone, and when the link is back they find each other
// again and the side with fewer metadata changes since the split takes the other's.
BOOST_AUTO_TEST_CASE(a_cut_link_is_noticed_and_the_sides_agree_again_when_it_is_back,
                     *boost::unit_test::precondition(namespaces_usable)) {
  namespaced_pair pair;
  auto& net = pair.net;
  auto &a = *pair.a, &b = *pair.b;
  ctl_in(net, 0, a, {"declare-exchange", "split-before", "--type", "fanout"});
  BOOST_REQUIRE(listed_in(net, 1, b, "exchanges", split_exchanges({"split-before"})));

  BOOST_REQUIRE(net.cut(0, 1));
  BOOST_CHECK(listed_in(net, 0, a, "nodes", other_running("b", false)));
  BOOST_CHECK(listed_in(net, 1, b, "nodes", other_running("a", false)));
  // Each side changes things alone: a twice, b once.
  ctl_in(net, 0, a, {"declare-exchange", "split-a1", "--type", "direct"});
  ctl_in(net, 0, a, {"declare-exchange", "split-a2", "--type", "topic"});
  ctl_in(net, 1, b, {"declare-exchange", "split-b", "--type", "direct"});
  ctl_in(net, 1, b, {"delete-exchange", "split-before"});

  BOOST_REQUIRE(net.heal());
  BOOST_CHECK(listed_in(net, 0, a, "nodes", other_running("b", true)));
  BOOST_CHECK(listed_in(net, 1, b, "nodes", other_running("a", true)));
  // b made fewer changes during the split, so it takes a's view; a keeps its own.
  names healed{"split-before", "split-a1", "split-a2"};
  BOOST_CHECK(listed_in(net, 1, b, "exchanges", split_exchanges(healed)));
  BOOST_CHECK(listed_in(net, 0, a, "exchanges", split_exchanges(healed)));
  BOOST_CHECK(a.alive() && b.alive());
}

// A member cut off by a link that drops packets is reported within seconds, naming that, and
// the node left trying to reach it stops cleanly: CAF's blocking connect alone waits out the
// kernel's SYN retries (about two minutes), and held the node's shutdown that long.
BOOST_AUTO_TEST_CASE(a_member_behind_a_silent_link_is_reported_and_holds_up_no_shutdown,
                     *boost::unit_test::precondition(namespaces_usable)) {
  namespaced_pair pair;
  auto& net = pair.net;
  auto &a = *pair.a, &b = *pair.b;
  BOOST_REQUIRE(net.cut(0, 1));
  auto b_address = net.address(1) + ":" + std::to_string(pair.pb);
  BOOST_CHECK_MESSAGE(a.wait_for_log("cannot reach " + b_address + " (retrying): " + b_address +
                                     ": no answer within"),
                      a.log());
  // Stopped while it keeps trying: a clean exit, not the SIGKILL stop() sends after 30 s.
  int status = a.stop();
  BOOST_CHECK_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "a did not stop cleanly (status " << status << "): " << a.log());
  BOOST_TEST_MESSAGE("a's stop waited out its connections' deadline: "
                     << (a.log().find("exiting without waiting") != std::string::npos));
  BOOST_CHECK(b.alive());
}
