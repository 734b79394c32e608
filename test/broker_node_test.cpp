// The broker end to end, its vhosts, connections and the node process: vhosts as namespaces,
// logins, connection listings, stopping, garbage on the RPC port, stats logging and bad command
// lines. A real warren-node on a free port, driven through the client library over loopback
// TCP; each case states one behaviour. Its own suite because these cases are about who may
// connect and the node process itself, not about messages.
#include <boost/test/unit_test.hpp>

#include "broker_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

using namespace warren::test::broker;

BOOST_FIXTURE_TEST_SUITE(vhosts_and_connections, broker_fixture)

BOOST_AUTO_TEST_CASE(vhosts_are_separate_namespaces) {
  conn->add_vhost("other");
  conn->add_vhost("other");  // idempotent
  auto names = conn->list_vhosts();
  BOOST_TEST((names == strings{"/", "other"}), boost::test_tools::per_element());
  auto oconn = open("other");
  auto och = oconn->open_channel();
  och->queue_declare("q");
  ch->queue_declare("q");
  och->publish(message("", "q", "in other"));
  BOOST_TEST(queue_stats("q").messages_ready == 0u);
  BOOST_TEST(och->get("q")->body == "in other");
}

BOOST_AUTO_TEST_CASE(deleting_a_vhost_closes_its_connections) {
  conn->add_vhost("doomed");
  auto dconn = open("doomed");
  auto dch = dconn->open_channel();
  dch->queue_declare("q");
  conn->delete_vhost("doomed");
  std::string code;
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (code.empty() && std::chrono::steady_clock::now() < deadline) {
    try {
      dch->queue_declare("q");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const error& e) {
      code = e.code();
    }
  }
  BOOST_TEST(code == "CONNECTION_FORCED");
  BOOST_TEST(expect_error([&] { open("doomed"); }) == "NOT_FOUND");
}

BOOST_AUTO_TEST_CASE(unknown_vhosts_and_bad_passwords_are_refused) {
  BOOST_TEST(expect_error([&] { open("nowhere"); }) == "NOT_FOUND");
  connect_options o;
  o.port = node.port();
  o.user = "guest";
  o.password = "wrong";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(an_empty_user_name_is_refused_whatever_the_password) {
  connect_options o;
  o.port = node.port();
  o.user = "";
  o.password = "anything";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
  o.password = "";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(guest_may_only_connect_from_a_loopback_address) {
  auto address = warren::test::non_loopback_address();
  if (address.empty()) {
    BOOST_TEST_MESSAGE("no non-loopback IPv4 address on this machine: nothing to try");
    return;
  }
  node_process wide({"--bind", "0.0.0.0"});
  connect_options o;
  o.host = address;
  o.port = wide.port();
  o.user = "guest";
  o.password = "guest";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
  o.host = "127.0.0.1";
  BOOST_CHECK_NO_THROW(connection::open(o));
}

BOOST_AUTO_TEST_CASE(connections_are_listed_with_name_and_peer) {
  auto rows = conn->list_connections();
  BOOST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0].name == "test");
  BOOST_TEST(rows[0].peer.rfind("127.0.0.1:", 0) == 0u);
  BOOST_TEST(rows[0].channels == 1u);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_reports_disconnected_to_clients) {
  ch->queue_declare("q");
  node.stop();
  BOOST_TEST(expect_error([&] { ch->queue_declare("q"); }) == "DISCONNECTED");
}

BOOST_AUTO_TEST_CASE(sigterm_stops_the_node_cleanly) {
  auto status = node.stop();
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(node.log().find("stopping on SIGTERM") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(node)

BOOST_AUTO_TEST_CASE(garbage_on_the_rpc_port_drops_only_that_connection) {
  node_process node;
  connect_options o;
  o.port = node.port();
  auto good = connection::open(o);
  auto ch = good->open_channel();
  ch->queue_declare("kept");
  ch->publish({"", "kept", "safe", {}, false});
  // Random bytes, a truncated frame header and an absurd segment count and size.
  std::vector<std::string> payloads{std::string("\x00\x00\x00\x00\xff\xff\xff\x7f", 8),
                                    std::string("\xff\xff\xff\xff", 4), std::string(1, '\x01')};
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919) % 256);
  payloads.push_back(noise);
  for (const auto& p : payloads) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(node.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    BOOST_REQUIRE(write(fd, p.data(), p.size()) == static_cast<ssize_t>(p.size()));
    shutdown(fd, SHUT_WR);
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
  }
  BOOST_TEST(node.alive());
  BOOST_TEST(ch->get("kept")->body == "safe");
}

BOOST_AUTO_TEST_CASE(stats_interval_logs_active_queues) {
  node_process node({"--stats-interval", "1"});
  connect_options o;
  o.port = node.port();
  auto conn = connection::open(o);
  auto ch = conn->open_channel();
  ch->queue_declare("busy");
  ch->publish({"", "busy", "x", {}, false});
  // A summary line, then a table row for the queue: vhost, name, ready, unacked, consumers.
  const std::regex row(R"(stats:\s+/\s+busy\s+1\s+0\s+0\s)");
  const std::regex summary(R"(stats: 1 queues, 1 connections, 1 ready, 0 unacked; enqueued)");
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!std::regex_search(node.log(), row) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(std::regex_search(node.log(), row));
  BOOST_TEST(std::regex_search(node.log(), summary));
}

BOOST_AUTO_TEST_CASE(a_taken_port_is_a_clear_error) {
  node_process first;
  warren::test::temp_dir other_dir;
  auto r = warren::test::run_command(
      {WARREN_NODE_PATH, "--port", std::to_string(first.port()), "--data-dir", other_dir.path()});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())) !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_flags_are_usage_errors) {
  auto r = warren::test::run_command({WARREN_NODE_PATH, "--log-level", "loud"});
  BOOST_TEST(r.exit_code == 2);
  r = warren::test::run_command({WARREN_NODE_PATH, "--port", "70000"});
  BOOST_TEST(r.exit_code == 2);
}

BOOST_AUTO_TEST_SUITE_END()
