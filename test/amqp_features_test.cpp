// RabbitMQ features AMQP clients rely on, driven by pika against a real node: transactions,
// exchange-to-exchange bindings, alternate exchanges, priority queues, x-max-length-bytes,
// reject-publish-dlx, single active consumer, consumer priorities and the consumer timeout.
// The scenarios and what they assert are in test/amqp/pika_features.py.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

using warren::test::node_process;
using warren::test::run_command;

namespace {

const std::string script = std::string(WARREN_SOURCE_DIR) + "/test/amqp/pika_features.py";

// Runs scenario `name` of the script against `node`; `extra` are further arguments it takes.
void scenario(node_process& node, const std::string& name, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{PYTHON3_PATH, script, std::to_string(node.amqp_port()), name};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = run_command(argv);
  BOOST_TEST(r.exit_code == 0, name << " exited " << r.exit_code << ":\n" << r.out << r.err);
  BOOST_TEST(node.alive());
}

struct one_node {
  node_process node;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(features, one_node)

BOOST_AUTO_TEST_CASE(transactions_publish_at_commit) {
  scenario(node, "transactions_publish_at_commit");
}
BOOST_AUTO_TEST_CASE(transactions_ack_at_commit) {
  scenario(node, "transactions_ack_at_commit");
}
BOOST_AUTO_TEST_CASE(transactions_returns_and_mode_errors) {
  scenario(node, "transactions_returns_and_mode_errors");
}
BOOST_AUTO_TEST_CASE(transactions_refused_publish_fails_the_commit) {
  scenario(node, "transactions_refused_publish_fails_the_commit");
}
BOOST_AUTO_TEST_CASE(properties_kept_as_published) {
  scenario(node, "properties_kept_as_published");
}
BOOST_AUTO_TEST_CASE(requeue_keeps_original_order) {
  scenario(node, "requeue_keeps_original_order");
}
BOOST_AUTO_TEST_CASE(transactions_count_in_the_memory_ledger) {
  scenario(node, "transactions_count_in_the_memory_ledger", {std::to_string(node.http_port())});
}
BOOST_AUTO_TEST_CASE(exchange_to_exchange_bindings) {
  scenario(node, "exchange_to_exchange_bindings");
}
BOOST_AUTO_TEST_CASE(alternate_exchange) {
  scenario(node, "alternate_exchange");
}
BOOST_AUTO_TEST_CASE(priority_queue) {
  scenario(node, "priority_queue");
}
BOOST_AUTO_TEST_CASE(priority_queue_requeue_keeps_order) {
  scenario(node, "priority_queue_requeue_keeps_order");
}
BOOST_AUTO_TEST_CASE(max_length_bytes) {
  scenario(node, "max_length_bytes");
}
BOOST_AUTO_TEST_CASE(reject_publish_dlx) {
  scenario(node, "reject_publish_dlx");
}
BOOST_AUTO_TEST_CASE(single_active_consumer) {
  scenario(node, "single_active_consumer");
}
BOOST_AUTO_TEST_CASE(consumer_priorities) {
  scenario(node, "consumer_priorities");
}
BOOST_AUTO_TEST_CASE(streams_over_amqp) {
  scenario(node, "streams_over_amqp");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(durable_bindings_alternate_exchanges_and_stored_properties_survive_a_restart) {
  warren::test::temp_dir data;
  {
    node_process node({}, data.path());
    scenario(node, "e2e_setup_durable");
  }
  node_process node({}, data.path());
  scenario(node, "e2e_check_durable");
}

BOOST_AUTO_TEST_CASE(a_delivery_unacked_past_the_consumer_timeout_closes_its_channel) {
  node_process node({"--consumer-timeout", "500"});
  scenario(node, "consumer_timeout");
}
