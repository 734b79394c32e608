// The AMQP 0-9-1 listener, as RabbitMQ's clients use it: real clients that were not written here
// (pika, rabbitmq-c's amqp-tools, amqplib on Node.js) against a real node on free ports, the same
// queues used from both front doors, and a raw socket sending what no client should.
#include <boost/test/unit_test.hpp>

#include "amqp_raw_client.hpp"
#include "net/amqp/frame.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

using namespace warren::amqp;
using warren::test::frame_bytes;
using warren::test::node_process;
using warren::test::patience;
using warren::test::raw_client;
using warren::test::run_command;
using namespace std::string_literals;

namespace {

const std::string scripts = std::string(WARREN_SOURCE_DIR) + "/test/amqp/";

// The node is up and serves a new AMQP client.
void expect_node_serves(node_process& node) {
  BOOST_REQUIRE(node.alive());
  raw_client c(node.amqp_port());
  c.handshake();
}

// Runs a client program; fails the test with its output when it does not exit 0.
void expect_client_ok(const std::vector<std::string>& argv, const std::string& input = {}) {
  auto r = run_command(argv, input);
  BOOST_TEST(r.exit_code == 0, argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << " exited "
                                       << r.exit_code << ":\n"
                                       << r.out << r.err);
}

}  // namespace

// --- pika ---------------------------------------------------------------------------------------

struct pika_fixture {
  node_process node;
  void scenario(const std::string& name) {
    expect_client_ok(
        {PYTHON3_PATH, scripts + "pika_scenarios.py", std::to_string(node.amqp_port()), name});
    BOOST_TEST(node.alive());
  }
};

BOOST_FIXTURE_TEST_SUITE(pika, pika_fixture)

BOOST_AUTO_TEST_CASE(declare_bind_publish_consume) {
  scenario("declare_bind_publish_consume");
}
BOOST_AUTO_TEST_CASE(nack_and_requeue) {
  scenario("nack_and_requeue");
}
BOOST_AUTO_TEST_CASE(confirms_and_returns) {
  scenario("confirms_and_returns");
}
BOOST_AUTO_TEST_CASE(get_and_get_empty) {
  scenario("get_and_get_empty");
}
BOOST_AUTO_TEST_CASE(prefetch_bounds_deliveries) {
  scenario("prefetch_bounds_deliveries");
}
BOOST_AUTO_TEST_CASE(killed_consumer_returns_its_messages) {
  scenario("killed_consumer_returns_its_messages");
}
BOOST_AUTO_TEST_CASE(passive_declares_of_missing_things) {
  scenario("passive_declares_of_missing_things");
}
BOOST_AUTO_TEST_CASE(deleting_a_queue_cancels_its_consumers) {
  scenario("deleting_a_queue_cancels_its_consumers");
}
BOOST_AUTO_TEST_CASE(channel_errors_and_unsupported_things) {
  scenario("channel_errors_and_unsupported_things");
}
BOOST_AUTO_TEST_CASE(bad_credentials_and_vhosts) {
  scenario("bad_credentials_and_vhosts");
}

BOOST_AUTO_TEST_SUITE_END()

// --- flow control ------------------------------------------------------------------------------

// Needs root to mount a small tmpfs (CI and the development machines run as root).
BOOST_AUTO_TEST_CASE(a_disk_alarm_blocks_publishers_until_space_returns) {
  warren::test::tmpfs_mount mount_point("16m");
  node_process node({"--disk-free-limit", "8000000"}, mount_point.path() + "/data");
  raw_client c(node.amqp_port());
  c.handshake(0, true);
  c.open_channel(1);
  auto declare = method_payload({50, 10});
  declare.short_uint(0);
  declare.short_string("held");
  declare.bits({false, false, false, false, false});
  declare.field_table({});
  c.send_method(1, std::move(declare));
  BOOST_REQUIRE((c.next_method().first == method_id{50, 11}));

  // Fill the disk past the limit: the node says it holds publishers back.
  auto ballast = mount_point.path() + "/ballast";
  {
    std::string block(1 << 20, 'b');
    FILE* f = std::fopen(ballast.c_str(), "w");
    BOOST_REQUIRE(f != nullptr);
    for (int i = 0; i < 10; ++i) std::fwrite(block.data(), 1, block.size(), f);
    std::fclose(f);
  }
  auto [blocked, reason] = c.next_method();
  BOOST_REQUIRE((blocked == method_id{10, 60}));
  BOOST_TEST(reader(reason).short_string().find("disk alarm") != std::string::npos);

  // A publish now is not taken while the alarm lasts.
  auto publish = method_payload({60, 40});
  publish.short_uint(0);
  publish.short_string("");
  publish.short_string("held");
  publish.bits({false, false});
  content_header h;
  h.body_size = 4;
  std::string frames;
  write_content(frames, 1, publish.bytes(), h, "wait", frame_min_size);
  c.send(frames);
  warren::client::connect_options o;
  o.port = node.port();
  auto admin = warren::client::connection::open(o);
  auto ready = [&] {
    for (const auto& q : admin->list_queues())
      if (q.name == "held") return q.messages_ready;
    return uint64_t{999};
  };
  BOOST_TEST(ready() == 0u);

  // Space returns: unblocked, and the publish goes through.
  std::filesystem::remove(ballast);
  BOOST_REQUIRE((c.next_method().first == method_id{10, 61}));
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (ready() != 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_TEST(ready() == 1u);
}

// --- rabbitmq-c's amqp-tools
// ----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(amqp_tools_declare_publish_get_and_consume) {
  node_process node;
  auto url = "amqp://guest:guest@127.0.0.1:" + std::to_string(node.amqp_port());
  auto tool = [](const char* name) { return std::string(AMQP_TOOLS_DIR) + "/" + name; };
  auto declared = run_command({tool("amqp-declare-queue"), "--url", url, "-d", "-q", "tools"});
  BOOST_REQUIRE_MESSAGE(declared.exit_code == 0, declared.err);
  BOOST_TEST(declared.out == "tools\n");
  for (auto body : {"first", "second", "third"})
    expect_client_ok({tool("amqp-publish"), "--url", url, "-r", "tools", "-p", "-b", body});
  auto got = run_command({tool("amqp-get"), "--url", url, "-q", "tools"});
  BOOST_TEST(got.exit_code == 0);
  BOOST_TEST(got.out == "first");
  // amqp-consume runs a command per message; -c stops after that many.
  auto consumed =
      run_command({tool("amqp-consume"), "--url", url, "-q", "tools", "-c", "2", "cat"});
  BOOST_TEST(consumed.exit_code == 0, consumed.err);
  BOOST_TEST(consumed.out == "secondthird");
  auto empty = run_command({tool("amqp-get"), "--url", url, "-q", "tools"});
  BOOST_TEST(empty.exit_code != 0);  // amqp-get reports an empty queue as a failure
  expect_client_ok({tool("amqp-delete-queue"), "--url", url, "-q", "tools"});
}

// --- amqplib on Node.js -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(amqplib_confirms_prefetch_acks_and_nacks) {
  // amqplib comes from the npm registry, installed once into the build tree.
  std::string modules = std::string(WARREN_NPM_DIR) + "/node_modules";
  if (!std::filesystem::exists(modules + "/amqplib/package.json")) {
    auto r = run_command({NPM_PATH, "install", "--no-audit", "--no-fund", "--prefix",
                          WARREN_NPM_DIR, "amqplib@0.10"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "npm install amqplib failed:\n" << r.out << r.err);
  }
  node_process node;
  BOOST_REQUIRE(setenv("NODE_PATH", modules.c_str(), 1) == 0);
  expect_client_ok(
      {NODE_PATH_BIN, scripts + "amqplib_scenarios.js", std::to_string(node.amqp_port())});
  BOOST_TEST(node.alive());
}

// --- both front doors on one queue --------------------------------------------------------------

BOOST_AUTO_TEST_CASE(one_queue_from_both_front_doors) {
  node_process node;
  auto tool = [](const char* name) { return std::string(AMQP_TOOLS_DIR) + "/" + name; };
  auto url = "amqp://guest:guest@127.0.0.1:" + std::to_string(node.amqp_port());
  warren::client::connect_options o;
  o.port = node.port();
  auto conn = warren::client::connection::open(o);
  auto ch = conn->open_channel();
  warren::client::queue_options qo;
  qo.durable = true;
  ch->queue_declare("shared", qo);
  // AMQP in, Cap'n Proto out: body, key and properties arrive intact.
  expect_client_ok({tool("amqp-publish"), "--url", url, "-r", "shared", "-p", "-C", "text/plain",
                    "-b", "from amqp"});
  auto d = ch->get("shared");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->body == "from amqp");
  BOOST_TEST(d->routing_key == "shared");
  BOOST_TEST(d->properties.persistent);
  BOOST_TEST(d->properties.content_type == "text/plain");
  // Cap'n Proto in, AMQP out.
  warren::client::outbound_message m;
  m.routing_key = "shared";
  m.body = "from capnp";
  ch->publish(m);
  auto got = run_command({tool("amqp-get"), "--url", url, "-q", "shared"});
  BOOST_TEST(got.exit_code == 0);
  BOOST_TEST(got.out == "from capnp");
}

// --- what no client should send ------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(bad_input)

BOOST_AUTO_TEST_CASE(a_wrong_protocol_header_gets_ours_back_and_the_socket_closes) {
  node_process node;
  raw_client c(node.amqp_port());
  c.send("GET / HTTP/1.1\r\n\r\n");
  BOOST_TEST(c.read_to_end() == std::string(protocol_header));
  expect_node_serves(node);
}

// connection.start-ok with `mechanism` and `response`; returns the code of the connection.close
// that answers it, or 0 when the node went on to connection.tune.
uint16_t login(raw_client& c, const std::string& mechanism, const std::string& response) {
  c.send(std::string(protocol_header));
  BOOST_REQUIRE((c.next_method().first == method_id{10, 10}));
  auto ok = method_payload({10, 11});
  ok.field_table({});
  ok.short_string(mechanism);
  ok.long_string(response);
  ok.short_string("en_US");
  c.send_method(0, std::move(ok));
  auto [id, args] = c.next_method();
  if (id == method_id{10, 30}) return 0;
  BOOST_REQUIRE((id == method_id{10, 50}));
  return reader(args).short_uint();
}

BOOST_AUTO_TEST_CASE(an_empty_user_name_is_refused_by_plain_and_amqplain) {
  node_process node;
  {
    raw_client c(node.amqp_port());
    BOOST_TEST(login(c, "PLAIN", "\0\0anything"s) == 403);
  }
  {
    raw_client c(node.amqp_port());
    writer only_password;
    only_password.field_table({{"PASSWORD", value::of_string("anything")}});
    BOOST_TEST(login(c, "AMQPLAIN", only_password.bytes().substr(4)) == 403);
  }
  {
    raw_client c(node.amqp_port());
    BOOST_TEST(login(c, "PLAIN", "\0guest\0guest"s) == 0);
  }
  expect_node_serves(node);
}

BOOST_AUTO_TEST_CASE(framing_mistakes_close_the_connection_with_frame_error) {
  node_process node;
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"unknown frame type", frame_bytes(0x41, 0, "x")},
      {"frame over frame_max", "\x03\x00\x01\x7f\xff\xff\xff"s},
      {"bad frame-end octet", frame_bytes(1, 0, "\x00\x0a\x00\x32"s, 0x00)},
      {"heartbeat on a channel", frame_bytes(8, 1, "")},
  };
  for (const auto& [what, bytes] : cases) {
    BOOST_TEST_CONTEXT(what) {
      raw_client c(node.amqp_port());
      c.handshake();
      c.send(bytes);
      BOOST_TEST(c.expect_connection_close() == 501);
    }
  }
  expect_node_serves(node);
}

BOOST_AUTO_TEST_CASE(misplaced_frames_close_the_connection_with_their_code) {
  node_process node;
  {
    // A method on a channel that was never opened: CHANNEL_ERROR.
    raw_client c(node.amqp_port());
    c.handshake();
    auto qos = method_payload({60, 10});
    qos.long_uint(0);
    qos.short_uint(10);
    qos.bits({false});
    c.send_method(7, std::move(qos));
    BOOST_TEST(c.expect_connection_close() == 504);
  }
  {
    // A channel number above the negotiated channel_max (2047): CHANNEL_ERROR.
    raw_client c(node.amqp_port());
    c.handshake();
    auto open = method_payload({20, 10});
    open.short_string("");
    c.send_method(65535, std::move(open));
    BOOST_TEST(c.expect_connection_close() == 504);
  }
  {
    // Content without a basic.publish before it: UNEXPECTED_FRAME.
    raw_client c(node.amqp_port());
    c.handshake();
    c.open_channel(1);
    c.send(frame_bytes(3, 1, "stray body"));
    BOOST_TEST(c.expect_connection_close() == 505);
  }
  {
    // Arguments cut short: SYNTAX_ERROR.
    raw_client c(node.amqp_port());
    c.handshake();
    c.open_channel(1);
    auto declare = method_payload({50, 10});
    declare.short_uint(0);
    declare.octet(200);  // a queue name of 200 bytes that never comes
    c.send_method(1, std::move(declare));
    BOOST_TEST(c.expect_connection_close() == 502);
  }
  expect_node_serves(node);
}

BOOST_AUTO_TEST_CASE(random_and_truncated_frames_never_take_the_node_down) {
  node_process node;
  std::mt19937 random(20261130);  // fixed: a failure can be replayed
  for (int round = 0; round < 100; ++round) {
    raw_client c(node.amqp_port());
    c.handshake();
    if (round % 2 == 0) c.open_channel(1);
    std::string junk(1 + random() % 300, '\0');
    for (auto& ch : junk) ch = static_cast<char>(random());
    if (round % 3 == 0) {
      // A plausible frame start with a random size, cut off.
      junk = frame_bytes(static_cast<uint8_t>(1 + random() % 3), 1, junk).substr(0, junk.size());
    }
    c.send(junk);
    c.close_write();
    c.read_to_end();  // whatever the node answers, it ends the connection
  }
  expect_node_serves(node);
  // And a well-behaved client still gets the whole service.
  expect_client_ok({PYTHON3_PATH, scripts + "pika_scenarios.py", std::to_string(node.amqp_port()),
                    "get_and_get_empty"});
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_dropped_after_missed_heartbeats) {
  node_process node({"--heartbeat", "1"});
  raw_client c(node.amqp_port());
  c.handshake(1);
  // Say nothing more: the node sends heartbeats, then gives up on us and closes the socket.
  size_t heartbeats = 0;
  while (auto f = c.next_frame())
    if (f->type == frame_type::heartbeat) ++heartbeats;
  BOOST_TEST(heartbeats >= 1u);
  // The node logged why (its log is read by another thread: wait for the line).
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (node.log().find("missed heartbeats") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_TEST(node.log().find("missed heartbeats") != std::string::npos);
  expect_node_serves(node);
}

BOOST_AUTO_TEST_SUITE_END()
