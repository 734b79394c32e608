// The AMQP connection's own methods and lifecycle, with raw frames sent the way real clients
// send them against a real node: connection.update-secret, a client's connection.close with
// frames still behind it, a connection-level close naming the method that caused it, and a
// listener that keeps working after answers to closed connections. Its own suite because these
// are rules of the connection (channel 0), apart from the channel state machine
// (amqp_channel_test).
#include <boost/test/unit_test.hpp>

#include "amqp_channel_fixture.hpp"
#include "amqp_raw_client.hpp"
#include "subprocess.hpp"

#include <cstring>
#include <tuple>

using namespace warren::amqp;
using warren::test::channel_one;
using warren::test::node_process;
using warren::test::publish_frames;
using warren::test::raw_client;

// connection.update-secret (an OAuth client refreshing its token) is answered update-secret-ok
// and the connection goes on. The secret is not a password: a password login does not expire,
// and RabbitMQ's internal users take any new secret (pika's and amqplib's suites send one).
BOOST_FIXTURE_TEST_CASE(update_secret_is_answered_and_the_connection_goes_on, channel_one) {
  auto update = [&](const std::string& secret) {
    auto w = method_payload({10, 70});
    w.long_string(secret);
    w.short_string("token refresh");
    c.send_method(0, std::move(w));
  };
  update("guest");
  BOOST_TEST((c.next_method().first == method_id{10, 71}));
  update("a new OAuth token, not guest's password");
  BOOST_TEST((c.next_method().first == method_id{10, 71}));
  c.open_channel(2);  // the connection goes on
}

// A client's connection.close with publishes queued behind it: the node answers close-ok, then
// shuts its side and reads what still comes until the client closes, as RabbitMQ does. A socket
// closed with unread input answers the client's writes with a reset (EPIPE or ECONNRESET in
// amqplib's tests) instead of a clean close.
BOOST_FIXTURE_TEST_CASE(a_client_close_is_drained_not_reset, channel_one) {
  auto close = warren::test::client_close_method();
  c.send_method(0, std::move(close));
  BOOST_REQUIRE((c.next_method().first == method_id{10, 51}));
  // Still writing after close-ok came, as a client with a queue of publishes is.
  for (int i = 0; i < 50; ++i) c.send(publish_frames(1, "", "nowhere", std::string(60000, 'x')));
  c.close_write();
  c.read_to_end();
  BOOST_TEST(c.read_error() == 0, "the node reset the connection: " << strerror(c.read_error()));
}

// A connection-level close names the method that caused it, as RabbitMQ's does (clients test
// the ids and the text): basic.publish with immediate=true is 540 "NOT_IMPLEMENTED -
// immediate=true" for 60/40, and a method on a channel that is not open names that method.
BOOST_AUTO_TEST_CASE(a_connection_close_names_the_method_that_caused_it) {
  node_process node;
  auto close_of = [](raw_client& c) {
    auto [id, args] = c.next_method();
    BOOST_REQUIRE((id == method_id{10, 50}));
    reader r(args);
    auto code = r.short_uint();
    auto text = r.short_string();
    auto class_id = r.short_uint();
    auto method = r.short_uint();
    return std::make_tuple(code, text, class_id, method);
  };
  {
    raw_client c(node.amqp_port());
    c.handshake();
    c.open_channel(1);
    auto m = method_payload({60, 40});
    m.short_uint(0);
    m.short_string("");
    m.short_string("q");
    m.bits({false, true});  // mandatory, immediate
    c.send_method(1, std::move(m));
    auto [code, text, class_id, method] = close_of(c);
    BOOST_TEST(code == 540);
    BOOST_TEST(text == "NOT_IMPLEMENTED - immediate=true");
    BOOST_TEST(class_id == 60);
    BOOST_TEST(method == 40);
  }
  {
    raw_client c(node.amqp_port());
    c.handshake();
    auto get = method_payload({60, 70});
    get.short_uint(0);
    get.short_string("q");
    get.bits({true});
    c.send_method(7, std::move(get));  // channel 7 was never opened
    auto [code, text, class_id, method] = close_of(c);
    BOOST_TEST(code == 504);
    BOOST_TEST(class_id == 60);
    BOOST_TEST(method == 70);
  }
}

// Confirms that come after close-ok to a client's close are dropped, not written to the socket
// whose write side is shut: such a write once failed inside the listener's bridge and stopped
// it, and every connection on that listener then waited for ever. Each round closes right
// behind a burst of confirmed publishes; a new connection must still get through.
BOOST_AUTO_TEST_CASE(answers_after_a_client_close_leave_the_listener_working) {
  node_process node;
  for (int round = 0; round < 20; ++round) {
    raw_client c(node.amqp_port());
    c.handshake();
    c.open_channel(1);
    auto select = method_payload({85, 10});
    select.bits({false});
    c.send_method(1, std::move(select));
    BOOST_REQUIRE((c.next_method().first == method_id{85, 11}));
    std::string burst;
    for (int i = 0; i < 200; ++i) burst += publish_frames(1, "", "nowhere", "x");
    auto close = warren::test::client_close_method();
    write_frame(burst, frame_type::method, 0, close.bytes());
    c.send(burst);
    while (!(c.next_method().first == method_id{10, 51})) {
    }
    c.close_write();
    c.read_to_end();
  }
  raw_client last(node.amqp_port());
  last.handshake();  // fails (nothing from the node) when the listener stopped
  BOOST_TEST(node.alive());
}
