// The management door (HTTP) against a real node: RabbitMQ's rabbitmqadmin, raw HTTP requests
// and errors, peek, and /metrics read by Prometheus' own parser. The scenarios and what they
// assert are in test/http/management_scenarios.py.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

using warren::test::node_process;
using warren::test::run_command;

namespace {

const std::string script = std::string(WARREN_SOURCE_DIR) + "/test/http/management_scenarios.py";

void scenario(const std::string& name) {
  node_process node;
  BOOST_REQUIRE(node.http_port() != 0);
  auto r =
      run_command({PYTHON3_PATH, script, std::to_string(node.http_port()),
                   std::to_string(node.amqp_port()), name, std::to_string(node.metrics_port())});
  BOOST_TEST(r.exit_code == 0, name << " exited " << r.exit_code << ":\n" << r.out << r.err);
  BOOST_TEST(node.alive());
}

}  // namespace

BOOST_AUTO_TEST_CASE(rabbitmqadmin_commands) {
  scenario("rabbitmqadmin_commands");
}
BOOST_AUTO_TEST_CASE(errors_as_rabbitmq_writes_them) {
  scenario("errors_as_rabbitmq_writes_them");
}
BOOST_AUTO_TEST_CASE(peek_leaves_messages) {
  scenario("peek_leaves_messages");
}
BOOST_AUTO_TEST_CASE(metrics_parse) {
  scenario("metrics_parse");
}
BOOST_AUTO_TEST_CASE(rates_and_listings) {
  scenario("rates_and_listings");
}

// Nesting is capped at every door, and what is taken at the cap is stored and read back: listed,
// exported, and still there after a restart.
BOOST_AUTO_TEST_CASE(nesting_is_capped_and_what_is_taken_survives_a_restart) {
  warren::test::temp_dir dir;
  auto run = [&](const std::string& name) {
    node_process node({}, dir.path());
    auto r = run_command({PYTHON3_PATH, script, std::to_string(node.http_port()),
                          std::to_string(node.amqp_port()), name});
    BOOST_TEST(r.exit_code == 0, name << " exited " << r.exit_code << ":\n" << r.out << r.err);
    BOOST_TEST(node.alive());
    BOOST_TEST(node.log().find("corrupt") == std::string::npos, node.log());
  };
  run("nesting_is_capped_and_what_is_taken_is_stored");
  run("deepest_read_back");
}

// Credentials are checked from the headers before a body is read; bodies have a size limit per
// route and must arrive within the handshake timeout (1 s here).
BOOST_AUTO_TEST_CASE(bodies_are_read_after_the_login_within_limits) {
  node_process node({"--handshake-timeout", "1000"});
  auto name = "bodies_are_read_after_the_login_within_limits";
  auto r = run_command({PYTHON3_PATH, script, std::to_string(node.http_port()),
                        std::to_string(node.amqp_port()), name});
  BOOST_TEST(r.exit_code == 0, name << " exited " << r.exit_code << ":\n" << r.out << r.err);
  BOOST_TEST(node.alive());
}

BOOST_AUTO_TEST_CASE(port_zero_turns_the_listener_off) {
  node_process node({"--http-port", "0"});
  BOOST_TEST(node.http_port() == 0);
  BOOST_TEST(node.log().find("management HTTP listener") == std::string::npos);
}
