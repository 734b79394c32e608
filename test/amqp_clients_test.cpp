// RabbitMQ's client libraries as their users run them, each against its own real node: the Go
// client, php-amqplib, aio-pika, kombu (Celery's transport) and Bunny, all from Debian. Each
// trips on different details (tag 0, header types, close races, transactions, exchange bindings,
// priorities, x-death); the scenarios are in test/amqp/.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

using warren::test::node_process;
using warren::test::run_command;

namespace {

const std::string scripts = std::string(WARREN_SOURCE_DIR) + "/test/amqp/";

// Runs one scenario of a client program against a fresh node.
void scenario(std::vector<std::string> program, const std::string& name) {
  node_process node;
  program.push_back(std::to_string(node.amqp_port()));
  program.push_back(name);
  auto r = run_command(program);
  BOOST_TEST(r.exit_code == 0, name << " exited " << r.exit_code << ":\n" << r.out << r.err);
  BOOST_TEST(node.alive());
}

void go(const std::string& name) {
  scenario({GO_SCENARIOS_PATH}, name);
}
void php(const std::string& name) {
  scenario({PHP_PATH, scripts + "php_scenarios.php"}, name);
}
void aio_pika(const std::string& name) {
  scenario({PYTHON3_PATH, scripts + "aio_pika_scenarios.py"}, name);
}
void kombu(const std::string& name) {
  scenario({PYTHON3_PATH, scripts + "kombu_scenarios.py"}, name);
}
void bunny(const std::string& name) {
  scenario({RUBY_PATH, scripts + "bunny_scenarios.rb"}, name);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(go_client)
BOOST_AUTO_TEST_CASE(get_tags_and_confirms) {
  go("get_tags_and_confirms");
}
BOOST_AUTO_TEST_CASE(close_after_failing_publish) {
  go("close_after_failing_publish");
}
BOOST_AUTO_TEST_CASE(header_types) {
  go("header_types");
}
BOOST_AUTO_TEST_CASE(tx_bind_and_qos) {
  go("tx_bind_and_qos");
}
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(php_amqplib)
BOOST_AUTO_TEST_CASE(gets_and_confirms) {
  php("gets_and_confirms");
}
BOOST_AUTO_TEST_CASE(header_types) {
  php("header_types");
}
BOOST_AUTO_TEST_CASE(errors_tx_and_bindings) {
  php("errors_tx_and_bindings");
}
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(aio_pika_client)
BOOST_AUTO_TEST_CASE(priorities_and_dead_letters) {
  aio_pika("priorities_and_dead_letters");
}
BOOST_AUTO_TEST_CASE(transactions_and_channel_errors) {
  aio_pika("transactions_and_channel_errors");
}
BOOST_AUTO_TEST_CASE(exchange_bindings_and_consumer_priority) {
  aio_pika("exchange_bindings_and_consumer_priority");
}
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kombu_client)
BOOST_AUTO_TEST_CASE(celery_like_tasks) {
  kombu("celery_like_tasks");
}
BOOST_AUTO_TEST_CASE(simple_queue_and_dead_letters) {
  kombu("simple_queue_and_dead_letters");
}
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bunny_client)
BOOST_AUTO_TEST_CASE(confirms_acks_and_redelivery) {
  bunny("confirms_acks_and_redelivery");
}
BOOST_AUTO_TEST_CASE(errors_tx_and_bindings) {
  bunny("errors_tx_and_bindings");
}
BOOST_AUTO_TEST_SUITE_END()
