// Clustering, with real warren-node processes on one machine: nodes join over CAF's middleman
// with a shared secret, find each other (a full mesh), see a member go down and come back, keep
// their membership across restarts, and refuse a node without the secret.
#include "cluster_nodes.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <set>
#include <thread>

using warren::test::free_port;
using warren::test::node_process;
using warren::test::run_command;
using namespace warren::test::cluster;

BOOST_AUTO_TEST_CASE(a_standalone_node_lists_only_itself) {
  node_process node;
  auto rows = warrenctl_json(node, {"list", "nodes"});
  BOOST_REQUIRE_EQUAL(rows.size(), 1u);
  BOOST_CHECK(rows[0]["running"].get<bool>());
  BOOST_CHECK(rows[0]["local"].get<bool>());
  BOOST_CHECK_EQUAL(rows[0]["address"].get<std::string>(), "");
  BOOST_CHECK(node.log().find("standalone") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(three_nodes_form_a_mesh_and_keep_it_across_restarts) {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  warren::test::temp_dir c_dir;  // outlives c's first run
  auto c = std::make_unique<node_process>(cluster_args("c", pc, address(pb)), c_dir.path());
  // c joined only b, and learned of a from it. Its ready line waited until it met a too: the
  // first listing after it (no polling) shows the whole mesh.
  std::map<std::string, bool> all_up{{"a", true}, {"b", true}, {"c", true}};
  BOOST_CHECK((members_seen_by(*c) == all_up));
  BOOST_CHECK(sees(a, all_up));
  BOOST_CHECK(sees(b, all_up));
  BOOST_CHECK(sees(*c, all_up));
  auto rows = warrenctl_json(a, {"list", "nodes"});
  BOOST_CHECK_EQUAL(rows[0]["name"].get<std::string>(), "a");
  BOOST_CHECK(rows[0]["local"].get<bool>());
  for (const auto& row : rows)
    if (row["name"] == "c") BOOST_CHECK_EQUAL(row["address"].get<std::string>(), address(pc));

  // A crashed member is seen as down, and as up again once it restarts: with no --join, from the
  // membership it stored.
  c->kill9();
  c.reset();
  BOOST_CHECK(sees(a, {{"a", true}, {"b", true}, {"c", false}}));
  BOOST_CHECK(sees(b, {{"a", true}, {"b", true}, {"c", false}}));
  node_process c_again(cluster_args("c", pc), c_dir.path());
  BOOST_CHECK(sees(c_again, all_up));
  BOOST_CHECK(sees(a, all_up));
}

BOOST_AUTO_TEST_CASE(a_running_node_cannot_be_forgotten_a_stopped_one_can) {
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa));
  auto b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)));
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}}));
  auto r = run_command({WARRENCTL_PATH, "--port", std::to_string(a.port()), "forget-node", "b"});
  BOOST_CHECK_NE(r.exit_code, 0);
  BOOST_CHECK_MESSAGE(r.err.find("PRECONDITION_FAILED") != std::string::npos, r.err);
  r = run_command({WARRENCTL_PATH, "--port", std::to_string(a.port()), "forget-node", "nobody"});
  BOOST_CHECK_MESSAGE(r.err.find("NOT_FOUND") != std::string::npos, r.err);

  // A third member with a queue of its own, stopped and then forgotten through a: every running
  // member forgets it and its queue.
  uint16_t pc = free_port();
  node_process c(cluster_args("c", pc, address(pa)));
  BOOST_REQUIRE(sees(*b, {{"a", true}, {"b", true}, {"c", true}}));
  warren::client::queue_options durable;
  durable.durable = true;
  connect(c)->open_channel()->queue_declare("on-c", durable);
  BOOST_REQUIRE(home_seen(*b, "on-c", "c"));
  c.stop();
  BOOST_REQUIRE(sees(*b, {{"a", true}, {"b", true}, {"c", false}}));
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}, {"c", false}}));
  r = run_command({WARRENCTL_PATH, "--port", std::to_string(a.port()), "forget-node", "c"});
  BOOST_CHECK_MESSAGE(r.exit_code == 0, r.err);
  BOOST_CHECK(sees(*b, {{"a", true}, {"b", true}}));
  BOOST_CHECK(home_seen(*b, "on-c", ""));

  b->stop();
  b.reset();
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", false}}));
  r = run_command({WARRENCTL_PATH, "--port", std::to_string(a.port()), "forget-node", "b"});
  BOOST_CHECK_MESSAGE(r.exit_code == 0, r.err);
  BOOST_CHECK((members_seen_by(a) == std::map<std::string, bool>{{"a", true}}));
  // Forgotten for good: not back after a restart from the same data dir.
  a.stop();
  node_process a_again(cluster_args("a", pa), a.data_dir());
  BOOST_CHECK((members_seen_by(a_again) == std::map<std::string, bool>{{"a", true}}));
}

BOOST_AUTO_TEST_CASE(a_node_without_the_secret_is_refused_and_logged) {
  uint16_t pa = free_port();
  node_process a(cluster_args("a", pa));
  warren::test::temp_dir dir;
  // With the cluster's certificates (the link lets it in), but not its secret.
  auto r = run_node(dir.path(), cluster_args("intruder", free_port(), address(pa), "guessed"));
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE((r.out + r.err).find("wrong cluster secret") != std::string::npos,
                      r.out + r.err);
  BOOST_CHECK(a.wait_for_log("refused intruder"));
  BOOST_CHECK((members_seen_by(a) == std::map<std::string, bool>{{"a", true}}));
}

// A restarted member starts whether or not the node --join names takes it (down, cut off, or,
// here, a node of another cluster that refuses it): it knows its members and meets them, and
// does not knock on the refusing node again.
BOOST_AUTO_TEST_CASE(a_restarted_member_starts_and_meets_its_members_though_its_join_node_refuses) {
  three_nodes n;
  uint16_t px = free_port();
  node_process stranger(cluster_args("x", px, {}, "another cluster's secret"));
  n.b.reset();
  n.b = std::make_unique<node_process>(cluster_args("b", n.pb, address(px)), n.b_dir.path());
  BOOST_CHECK(sees(*n.b, {{"a", true}, {"b", true}, {"c", true}}));
  BOOST_CHECK(n.b->wait_for_log("not joining " + address(px) + " again: it refused this node"));
  BOOST_CHECK((members_seen_by(stranger) == std::map<std::string, bool>{{"x", true}}));
}

namespace {

// Takes the first fifty of "orders" through `ch` by get, checking their order, each acked; then
// consumes through it (prefetch 10, each delivery acked) until fifty more came. The consumer
// stays: `received` counts its deliveries, and `cancelled` gets the reason it is cancelled with.
void get_fifty_then_consume_fifty(std::unique_ptr<warren::client::channel>& ch,
                                  std::atomic<int>& received,
                                  std::promise<std::string>& cancelled) {
  for (int i = 0; i < 50; ++i) {
    auto d = ch->get("orders");
    BOOST_REQUIRE(d);
    BOOST_CHECK_EQUAL(d->body, "m" + std::to_string(i));
    ch->ack(d->delivery_tag);
  }
  ch->qos(10);
  ch->consume(
      "orders", {},
      [&](const warren::client::delivery& d) {
        ++received;
        ch->ack(d.delivery_tag);
      },
      [&](const std::string&, const std::string& reason) { cancelled.set_value(reason); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (received < 50 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_CHECK_EQUAL(received.load(), 50);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_queue_on_one_node_takes_publishes_and_consumers_from_the_others) {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  warren::test::temp_dir a_dir;
  auto a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  node_process b(cluster_args("b", pb, address(pa)));
  node_process c(cluster_args("c", pc, address(pb)));
  BOOST_REQUIRE(sees(c, {{"a", true}, {"b", true}, {"c", true}}));

  warren::client::queue_options durable;
  durable.durable = true;
  connect(*a)->open_channel()->queue_declare("orders", durable);
  BOOST_REQUIRE(home_seen(b, "orders", "a"));
  BOOST_REQUIRE(home_seen(c, "orders", "a"));

  // Published through b with confirms: routed means the queue on a has it on disk.
  auto b_conn = connect(b);
  auto publisher = b_conn->open_channel();
  publisher->confirm_select();
  for (const auto& r : publisher->publish_batch(numbered("orders", 100)).get())
    BOOST_REQUIRE(r.outcome == warren::publish_outcome::routed);

  // Declared again through c: its home node answers, with its count and its arguments.
  auto c_conn = connect(c);
  auto ch = c_conn->open_channel();
  warren::client::queue_options passive;
  passive.passive = true;
  BOOST_CHECK_EQUAL(ch->queue_declare("orders", passive).message_count, 100u);
  BOOST_CHECK_EXCEPTION(
      ch->queue_declare("orders", warren::client::queue_options{}), warren::client::error,
      [](const warren::client::error& e) { return e.code() == "PRECONDITION_FAILED"; });
  ch = c_conn->open_channel();  // the failed declare closed the channel

  // Consumed through c, in order, with acks.
  std::promise<std::string> cancelled;
  std::atomic<int> received{0};
  get_fifty_then_consume_fifty(ch, received, cancelled);

  // The queue's node dies: c's consumer is cancelled, publishes through b are refused (never
  // confirmed), and declaring the queue names the node that is down.
  a->kill9();
  a.reset();
  auto reason = cancelled.get_future();
  BOOST_REQUIRE(reason.wait_for(std::chrono::minutes(1)) == std::future_status::ready);
  BOOST_TEST_MESSAGE("cancelled: " << reason.get());
  BOOST_REQUIRE(sees(b, {{"a", false}, {"b", true}, {"c", true}}));
  for (const auto& r : publisher->publish_batch(numbered("orders", 10)).get())
    BOOST_CHECK(r.outcome == warren::publish_outcome::rejected);
  auto probe_conn = connect(b);
  auto probe = probe_conn->open_channel();
  BOOST_CHECK_EXCEPTION(probe->queue_declare("orders", passive), warren::client::error,
                        [](const warren::client::error& e) {
                          BOOST_TEST_MESSAGE(e.what());
                          return e.code() == "NOT_FOUND" &&
                                 e.text().find("node a") != std::string::npos;
                        });

  // It comes back with its durable messages, and publishes reach it again.
  node_process a_again(cluster_args("a", pa), a_dir.path());
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}, {"c", true}}));
  auto deadline2 = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  warren::client::publish_result again;
  do {
    again = publisher->publish(numbered("orders", 1)[0]);
  } while (again.outcome != warren::publish_outcome::routed &&
           std::chrono::steady_clock::now() < deadline2);
  BOOST_CHECK(again.outcome == warren::publish_outcome::routed);
  // c learns of a's return over its own link to it, later than b may: until then it still
  // answers that a is down.
  auto c_again = connect(c);
  uint32_t count = 0;
  for (bool answered = false; !answered;) {
    try {
      count = c_again->open_channel()->queue_declare("orders", passive).message_count;
      answered = true;
    } catch (const warren::client::error& e) {
      BOOST_REQUIRE_MESSAGE(e.text().find("which is down") != std::string::npos, e.what());
      BOOST_REQUIRE(std::chrono::steady_clock::now() < deadline2);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  BOOST_CHECK_GE(count, 1u);  // what c had taken and acked stays taken
  BOOST_TEST_MESSAGE("after the restart: " << count << " messages");
}

BOOST_AUTO_TEST_CASE(fanout_and_topic_exchanges_reach_queues_on_three_nodes) {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  node_process c(cluster_args("c", pc, address(pa)));
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}, {"c", true}}));
  BOOST_REQUIRE(sees(b, {{"a", true}, {"b", true}, {"c", true}}));
  auto conn_a = connect(a), conn_b = connect(b), conn_c = connect(c);
  auto ch_a = conn_a->open_channel(), ch_b = conn_b->open_channel(), ch_c = conn_c->open_channel();
  ch_a->queue_declare("qa");
  ch_b->queue_declare("qb");
  ch_c->queue_declare("qc");
  for (auto* n : {&a, &b, &c})
    for (const char* q : {"qa", "qb", "qc"}) BOOST_REQUIRE(home_seen(*n, q, std::string(q, 1, 1)));

  // Declared on one node, bound from each: every node routes the same way.
  ch_a->exchange_declare("fan", "fanout");
  ch_b->exchange_declare("logs", "topic");
  ch_a->queue_bind("qa", "fan", "");
  ch_b->queue_bind("qb", "fan", "");
  ch_c->queue_bind("qc", "fan", "");
  ch_c->queue_bind("qa", "logs", "*.error");
  ch_a->queue_bind("qb", "logs", "app.#");
  ch_b->queue_bind("qc", "logs", "#");
  for (auto* n : {&a, &b, &c}) {
    BOOST_REQUIRE(bindings_seen(*n, "fan", {"qa ", "qb ", "qc "}));
    BOOST_REQUIRE(bindings_seen(*n, "logs", {"qa *.error", "qb app.#", "qc #"}));
  }

  ch_c->confirm_select();
  auto send = [&](const std::string& exchange, const std::string& key,
                  warren::publish_outcome expected = warren::publish_outcome::routed) {
    warren::client::outbound_message m;
    m.exchange = exchange;
    m.routing_key = key;
    m.body = exchange + "/" + key;
    BOOST_CHECK(ch_c->publish(m).outcome == expected);
  };
  send("fan", "");
  send("logs", "app.error");  // qa, qb, qc
  send("logs", "app.info");   // qb, qc
  send("logs", "db.error");   // qa, qc
  // Confirmed means every queue has it: the counts are there at once, seen from any node.
  BOOST_CHECK_EQUAL(ready_in(*ch_b, "qa"), 3u);
  BOOST_CHECK_EQUAL(ready_in(*ch_a, "qb"), 3u);
  BOOST_CHECK_EQUAL(ready_in(*ch_b, "qc"), 4u);
  auto first = ch_a->get("qc");  // consumed through a, from c
  BOOST_REQUIRE(first);
  BOOST_CHECK_EQUAL(first->body, "fan/");
  ch_a->ack(first->delivery_tag);

  // Unbinding on one node stops the route on all of them.
  ch_b->queue_unbind("qc", "logs", "#");
  for (auto* n : {&a, &b, &c}) BOOST_REQUIRE(bindings_seen(*n, "logs", {"qa *.error", "qb app.#"}));
  send("logs", "db.info", warren::publish_outcome::dropped);  // nobody
  BOOST_CHECK_EQUAL(ready_in(*ch_a, "qc"), 3u);
}

BOOST_AUTO_TEST_CASE(concurrent_declares_on_two_nodes_end_with_one_queue) {
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}}));
  auto conn_a = connect(a), conn_b = connect(b);
  constexpr int names = 20;
  // Each name is declared on both nodes at once: with different arguments for even names, the
  // same for odd ones.
  auto declare_all = [&](warren::client::connection& conn, int max_length) {
    std::vector<std::string> outcome;
    for (int i = 0; i < names; ++i) {
      warren::client::queue_options o;
      o.durable = true;
      o.arguments.push_back(
          {"x-max-length", warren::field_value::of_int(i % 2 == 0 ? max_length : 1000)});
      auto ch = conn.open_channel();
      try {
        ch->queue_declare("contested-" + std::to_string(i), o);
        outcome.push_back("ok");
      } catch (const warren::client::error& e) {
        outcome.push_back(e.code());
      }
    }
    return outcome;
  };
  auto on_a = std::async(std::launch::async, [&] { return declare_all(*conn_a, 10); });
  auto on_b = std::async(std::launch::async, [&] { return declare_all(*conn_b, 20); });
  auto from_a = on_a.get(), from_b = on_b.get();
  for (int i = 0; i < names; ++i) {
    auto name = "contested-" + std::to_string(i);
    if (i % 2 == 0) {
      BOOST_CHECK_MESSAGE((from_a[i] == "ok") != (from_b[i] == "ok"),
                          name << ": " << from_a[i] << " on a, " << from_b[i] << " on b");
      BOOST_CHECK(from_a[i] == "ok" || from_a[i] == "PRECONDITION_FAILED");
      BOOST_CHECK(from_b[i] == "ok" || from_b[i] == "PRECONDITION_FAILED");
    } else {
      BOOST_CHECK_MESSAGE(from_a[i] == "ok" && from_b[i] == "ok", name);
    }
    // One queue, on one node, and both nodes agree which.
    std::string home = home_of(a, name);
    BOOST_CHECK_MESSAGE(home == "a" || home == "b", name << " lives on '" << home << "'");
    BOOST_CHECK(home_seen(b, name, home));
  }
  size_t listed = 0;
  for (const auto& q : conn_a->list_queues()) listed += q.name.rfind("contested-", 0) == 0;
  BOOST_CHECK_EQUAL(listed, size_t{names});
}

BOOST_AUTO_TEST_CASE(users_vhosts_and_permissions_are_the_same_on_every_node) {
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa));
  auto on_a = connect(a);
  on_a->add_user("alice", "alice-secret", {"administrator"});
  on_a->add_vhost("orders");
  on_a->set_permissions({"alice", "orders", ".*", ".*", ".*"});
  on_a->set_permissions({"guest", "/", ".*", ".*", "^amq\\.gen"});

  // b had a user of its own before it ever joined a cluster: joining for the first time (told
  // to set its own data aside), it takes a's users, vhosts and permissions in place of its own.
  warren::test::temp_dir b_parent;  // b's data dir and, beside it, what it moves aside
  auto b_dir = b_parent.path() + "/data";
  {
    node_process b_alone({}, b_dir);
    connect(b_alone)->add_user("only-on-b", "x");
    b_alone.stop();
  }
  auto b_args = cluster_args("b", pb, address(pa));
  b_args.push_back("--reset-local-data");
  auto b = std::make_unique<node_process>(b_args, b_dir);
  BOOST_CHECK(access_seen(*b, [](const names& users, const names& vhosts, const names& perms) {
    return users == names{"alice", "guest"} && vhosts == names{"/", "orders"} &&
           perms ==
               names{"alice@orders:.*/.*/.*", "guest@/:.*/.*/^amq\\.gen", "guest@orders:.*/.*/.*"};
  }));
  BOOST_CHECK(logs_in(*b, "alice", "alice-secret", "orders"));

  // Changes made on either node reach the other.
  auto on_b = connect(*b);
  on_b->add_user("bob", "bob-secret");
  on_b->add_vhost("billing");
  on_b->set_permissions({"bob", "orders", ".*", ".*", ".*"});
  BOOST_CHECK(eventually_logs_in(a, "bob", "bob-secret", "orders"));
  BOOST_CHECK(access_seen(a, [](const names& users, const names& vhosts, const names&) {
    return users.count("bob") != 0 && vhosts.count("billing") != 0;
  }));
  on_a->change_password("bob", "bob-new-secret");
  BOOST_CHECK(eventually_logs_in(*b, "bob", "bob-new-secret", "orders"));
  BOOST_CHECK(!logs_in(*b, "bob", "bob-secret", "orders"));
  on_a->delete_user("alice");
  on_a->delete_vhost("billing");
  on_b->clear_permissions("bob", "orders");
  auto settled = [](const names& users, const names& vhosts, const names& perms) {
    return users == names{"bob", "guest"} && vhosts == names{"/", "orders"} &&
           perms == names{"guest@/:.*/.*/^amq\\.gen", "guest@orders:.*/.*/.*"};
  };
  BOOST_CHECK(access_seen(*b, settled));
  BOOST_CHECK(access_seen(a, settled));
  BOOST_CHECK(!logs_in(*b, "alice", "alice-secret", "orders"));

  // A member that comes back keeps what it stored, and does not hand its view to the others.
  on_b.reset();
  b->kill9();
  b = std::make_unique<node_process>(cluster_args("b", pb), b_dir);
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}}));
  BOOST_CHECK(access_seen(*b, settled));
  BOOST_CHECK(access_seen(a, settled));
}

BOOST_AUTO_TEST_CASE(declare_queue_with_node_creates_it_on_that_node) {
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  BOOST_REQUIRE(sees(a, {{"a", true}, {"b", true}}));
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {WARRENCTL_PATH, "--port", std::to_string(a.port())});
    return run_command(args);
  };
  // Asked on a, made on b, and routed to at once through a.
  auto made = ctl({"declare-queue", "placed", "--durable", "--node", "b"});
  BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  BOOST_CHECK_EQUAL(made.out, "placed\n");
  BOOST_CHECK_EQUAL(home_of(a, "placed"), "b");
  auto conn = connect(a);
  auto ch = conn->open_channel();
  ch->confirm_select();
  BOOST_CHECK(ch->publish(numbered("placed", 1)[0]).outcome == warren::publish_outcome::routed);
  BOOST_CHECK(home_seen(b, "placed", "b"));
  BOOST_CHECK_EQUAL(ready_in(*connect(b)->open_channel(), "placed"), 1u);
  // The C++ client's queue_options::node; naming the connected node is an ordinary declare.
  warren::client::queue_options on_a;
  on_a.node = "a";
  ch->queue_declare("here", on_a);
  BOOST_CHECK_EQUAL(home_of(b, "here"), "a");
  // Redeclaring an existing queue ignores --node, with the usual equivalence check.
  BOOST_CHECK_EQUAL(ctl({"declare-queue", "placed", "--durable", "--node", "a"}).exit_code, 0);
  BOOST_CHECK_EQUAL(home_of(a, "placed"), "b");

  auto unknown = ctl({"declare-queue", "nowhere", "--node", "z"});
  BOOST_CHECK_NE(unknown.exit_code, 0);
  BOOST_CHECK_MESSAGE(unknown.err.find("NOT_FOUND") != std::string::npos &&
                          unknown.err.find("'z'") != std::string::npos,
                      unknown.err);
  auto exclusive = ctl({"declare-queue", "mine", "--exclusive", "--node", "b"});
  BOOST_CHECK_NE(exclusive.exit_code, 0);
  BOOST_CHECK_MESSAGE(exclusive.err.find("PRECONDITION_FAILED") != std::string::npos,
                      exclusive.err);
  BOOST_CHECK_EQUAL(home_of(a, "nowhere"), "");
}

#ifdef PYTHON3_PATH
// pika, as a RabbitMQ user runs it, with its three connections on three nodes: declared on a,
// published with confirms through b, consumed with acks through c (test/amqp/pika_cluster.py).
BOOST_AUTO_TEST_CASE(pika_declares_publishes_and_consumes_through_three_nodes) {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  node_process c(cluster_args("c", pc, address(pa)));
  std::map<std::string, bool> all_up{{"a", true}, {"b", true}, {"c", true}};
  BOOST_REQUIRE(sees(a, all_up) && sees(b, all_up) && sees(c, all_up));
  auto r = run_command({PYTHON3_PATH, std::string(WARREN_SOURCE_DIR) + "/test/amqp/pika_cluster.py",
                        std::to_string(a.amqp_port()), std::to_string(b.amqp_port()),
                        std::to_string(c.amqp_port())});
  BOOST_CHECK_MESSAGE(r.exit_code == 0, "pika_cluster.py exited " << r.exit_code << ":\n"
                                                                  << r.out << r.err);
  BOOST_CHECK_EQUAL(home_of(b, "cross"), "a");
  BOOST_CHECK(a.alive() && b.alive() && c.alive());
}

// AMQP 0-9-1 and Cap'n Proto clients on different nodes share one queue: declared with Cap'n
// Proto on a, published with amqp-tools through b, consumed with Cap'n Proto through c, and the
// other way round.
BOOST_AUTO_TEST_CASE(amqp_and_capnp_clients_on_different_nodes_share_a_queue) {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  node_process a(cluster_args("a", pa));
  node_process b(cluster_args("b", pb, address(pa)));
  node_process c(cluster_args("c", pc, address(pa)));
  std::map<std::string, bool> all_up{{"a", true}, {"b", true}, {"c", true}};
  BOOST_REQUIRE(sees(b, all_up) && sees(c, all_up));
  warren::client::queue_options durable;
  durable.durable = true;
  connect(a)->open_channel()->queue_declare("mixed", durable);
  BOOST_REQUIRE(home_seen(b, "mixed", "a") && home_seen(c, "mixed", "a"));

  auto amqp_url = [](const node_process& n) {
    return "amqp://guest:guest@127.0.0.1:" + std::to_string(n.amqp_port());
  };
  for (int i = 0; i < 3; ++i) {
    auto r = run_command({AMQP_PUBLISH_PATH, "--url", amqp_url(b), "-r", "mixed", "-p", "-b",
                          "amqp-" + std::to_string(i)});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "amqp-publish: " << r.err);
  }
  auto c_conn = connect(c);
  auto ch = c_conn->open_channel();
  for (int i = 0; i < 3; ++i) {
    auto d = ch->get("mixed");
    BOOST_REQUIRE(d);
    BOOST_CHECK_EQUAL(d->body, "amqp-" + std::to_string(i));
    BOOST_CHECK(d->properties.persistent);
    ch->ack(d->delivery_tag);
  }
  BOOST_CHECK(!ch->get("mixed"));

  ch->confirm_select();
  warren::client::outbound_message m;
  m.routing_key = "mixed";
  m.body = "from capnp on c";
  BOOST_REQUIRE(ch->publish(m).outcome == warren::publish_outcome::routed);
  auto r = run_command({AMQP_GET_PATH, "--url", amqp_url(b), "-q", "mixed"});
  BOOST_CHECK_EQUAL(r.exit_code, 0);
  BOOST_CHECK_EQUAL(r.out, "from capnp on c");
  BOOST_CHECK(a.alive() && b.alive() && c.alive());
}
#endif

// A standalone node with data of its own, told to join: the cluster's metadata would replace its
// own, so it refuses and names what it holds. Told to reset, it moves the data dir aside (kept)
// and joins with an empty one.
BOOST_AUTO_TEST_CASE(a_node_with_data_of_its_own_refuses_to_join_until_told_to_move_it_aside) {
  uint16_t pa = free_port(), pb = free_port();
  node_process a(cluster_args("a", pa));
  warren::test::temp_dir parent;  // the data dir and, beside it, its moved-aside copy
  auto data = parent.path() + "/data";
  {
    node_process standalone({}, data);
    auto conn = connect(standalone);
    conn->add_vhost("v");
    warren::client::queue_options durable;
    durable.durable = true;
    auto ch = conn->open_channel();
    ch->queue_declare("kept", durable);
    ch->confirm_select();
    for (const auto& r : ch->publish_batch(numbered("kept", 1000)).get())
      BOOST_REQUIRE(r.outcome == warren::publish_outcome::routed);
  }
  auto join_args = cluster_args("b", pb, address(pa));
  auto r = run_node(data, join_args);
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  for (const char* named :
       {"refusing to join", "1 vhost (v)", "1 durable queue with", "--reset-local-data"})
    BOOST_CHECK_MESSAGE(r.err.find(named) != std::string::npos, named << " in: " << r.err);
  {
    node_process again({}, data);  // untouched
    BOOST_CHECK_EQUAL(ready_in(*connect(again)->open_channel(), "kept"), 1000u);
  }

  join_args.push_back("--reset-local-data");
  node_process b(join_args, data);
  BOOST_CHECK(sees(a, {{"a", true}, {"b", true}}));
  BOOST_CHECK(b.log().find("moved 1 vhost (v), 1 durable queue") != std::string::npos);
  std::vector<std::string> aside;
  for (const auto& entry : std::filesystem::directory_iterator(parent.path()))
    if (entry.path().filename().string().rfind("data.before-join-", 0) == 0)
      aside.push_back(entry.path().string());
  BOOST_REQUIRE_EQUAL(aside.size(), 1u);
  BOOST_CHECK(std::filesystem::exists(aside[0] + "/meta"));
  BOOST_CHECK(!std::filesystem::is_empty(aside[0] + "/queues"));
  BOOST_CHECK(home_of(b, "kept").empty());
  // Standalone on the copy moved aside, the messages are all there.
  b.stop();
  node_process restored({}, aside[0]);
  BOOST_CHECK_EQUAL(ready_in(*connect(restored)->open_channel(), "kept"), 1000u);
}
