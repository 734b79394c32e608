// warren-bench's contract for scripts: it moves the messages it says, reports the JSON keys, and
// leaves nothing behind unless --keep. (Figures are printed by benchmarks, never asserted.)
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

#include <nlohmann/json.hpp>

using nlohmann::json;
using warren::test::node_process;
using warren::test::run_command;

BOOST_AUTO_TEST_CASE(a_counted_run_delivers_everything_and_reports_json) {
  node_process node;
  auto r = run_command({WARREN_BENCH_PATH, "--port", std::to_string(node.port()), "--count", "3000",
                        "--producers", "2", "--consumers", "2", "--queues", "2", "--prefetch", "50",
                        "--confirm", "500", "--batch", "100", "--json"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto summary = json::parse(r.out);
  for (auto key :
       {"sent_per_s", "confirmed_per_s", "received_per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms"})
    BOOST_TEST(summary.contains(key));
  BOOST_TEST(summary["sent"] == 3000);
  BOOST_TEST(summary["confirmed"] == 3000);
  BOOST_TEST(summary["received"] == 3000);
  BOOST_TEST(summary["p50_ms"].get<double>() <= summary["max_ms"].get<double>());
  auto queues = run_command(
      {WARRENCTL_PATH, "--port", std::to_string(node.port()), "--json", "list", "queues"});
  BOOST_TEST(json::parse(queues.out).empty());
}

BOOST_AUTO_TEST_CASE(fanout_runs_deliver_a_copy_per_queue_and_keep_leaves_them) {
  node_process node;
  auto r = run_command({WARREN_BENCH_PATH, "--port", std::to_string(node.port()), "--count", "1000",
                        "--consumers", "3", "--queues", "3", "--exchange-type", "fanout",
                        "--auto-ack", "--persistent", "--keep", "--json"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto summary = json::parse(r.out);
  BOOST_TEST(summary["received"] == 3000);
  auto queues = json::parse(run_command({WARRENCTL_PATH, "--port", std::to_string(node.port()),
                                         "--json", "list", "queues"})
                                .out);
  BOOST_TEST(queues.size() == 3u);
  BOOST_TEST(queues[0]["durable"] == true);
}

BOOST_AUTO_TEST_CASE(topic_runs_route_every_message_to_one_group_of_four_queues) {
  node_process node;
  auto r = run_command({WARREN_BENCH_PATH, "--port", std::to_string(node.port()), "--count", "1000",
                        "--consumers", "0", "--queues", "8", "--exchange-type", "topic", "--keep"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  auto queues = json::parse(run_command({WARRENCTL_PATH, "--port", std::to_string(node.port()),
                                         "--json", "list", "queues"})
                                .out);
  BOOST_REQUIRE(queues.size() == 8u);
  // Two groups of four: each message lands in the four queues of its group.
  for (const auto& q : queues) BOOST_TEST(q["messages_ready"] == 500);
}

BOOST_AUTO_TEST_CASE(topic_runs_need_queues_in_groups_of_four) {
  BOOST_TEST(run_command({WARREN_BENCH_PATH, "--port", "1", "--count", "10", "--exchange-type",
                          "topic", "--queues", "6"})
                 .exit_code == 2);
}

BOOST_AUTO_TEST_CASE(missing_count_and_time_is_a_usage_error) {
  BOOST_TEST(run_command({WARREN_BENCH_PATH, "--port", "1"}).exit_code == 2);
}

BOOST_AUTO_TEST_CASE(the_delivery_window_is_passed_on_and_checked) {
  node_process node;
  auto r = run_command({WARREN_BENCH_PATH, "--port", std::to_string(node.port()), "--count", "500",
                        "--deliver-calls", "1", "--deliver-batch", "1", "--json"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  BOOST_TEST(json::parse(r.out)["received"] == 500);
  // Past the broker's limit: its error, naming the limit.
  r = run_command({WARREN_BENCH_PATH, "--port", std::to_string(node.port()), "--count", "10",
                   "--deliver-calls", "65"});
  BOOST_TEST(r.exit_code != 0);
  BOOST_TEST(r.err.find("PRECONDITION_FAILED") != std::string::npos, r.err);
}
