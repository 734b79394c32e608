// warrenctl's contract, as scripts rely on it: commands, JSON fields, errors and exit codes.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

using nlohmann::json;
using warren::test::command_result;
using warren::test::node_process;

namespace {

struct fixture {
  node_process node;

  command_result ctl(std::vector<std::string> args, const std::string& input = {}) {
    std::vector<std::string> argv{WARRENCTL_PATH, "--port", std::to_string(node.port())};
    argv.insert(argv.end(), args.begin(), args.end());
    return warren::test::run_command(argv, input);
  }

  command_result ok(std::vector<std::string> args, const std::string& input = {}) {
    auto r = ctl(args, input);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "warrenctl failed: " << r.err);
    return r;
  }

  std::vector<json> json_lines(const std::string& out) {
    std::vector<json> rows;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) rows.push_back(json::parse(line));
    return rows;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(warrenctl, fixture)

BOOST_AUTO_TEST_CASE(declare_publish_and_get_round_trip) {
  ok({"declare-queue", "q"});
  auto pub = ok({"publish", "", "q", "--body", "hello"});
  BOOST_TEST(pub.out.size() == 36u);  // one id and a newline
  auto got = ok({"get", "q"});
  BOOST_TEST(got.out == "hello\n");
  BOOST_TEST(ok({"get", "q"}).out.empty());
}

// peek prints ready messages and leaves them: a later get still takes the first, not redelivered.
BOOST_AUTO_TEST_CASE(peek_leaves_the_messages_in_the_queue) {
  ok({"declare-queue", "q"});
  for (int i = 0; i < 4; ++i) ok({"publish", "", "q", "--body", "m" + std::to_string(i)});
  BOOST_TEST(ok({"peek", "q", "--from", "1", "--count", "2"}).out == "m1\nm2\n");
  auto rows = json_lines(ok({"--json", "peek", "q"}).out);
  BOOST_REQUIRE(rows.size() == 4u);
  BOOST_TEST(rows[3]["body"] == "m3");
  BOOST_TEST(rows[0]["redelivered"] == false);
  auto got = json_lines(ok({"--json", "get", "q"}).out);
  BOOST_REQUIRE(got.size() == 1u);
  BOOST_TEST(got[0]["body"] == "m0");
  BOOST_TEST(got[0]["redelivered"] == false);
  BOOST_TEST(ctl({"peek", "q", "--count", "0"}).exit_code == 2);
  BOOST_TEST(ctl({"peek", "missing"}).exit_code != 0);
}

// Streams: consume --offset / --group, commit-offset, list groups, delete-queue --force.
BOOST_AUTO_TEST_CASE(streams_from_the_command_line) {
  ok({"declare-queue", "events", "--durable", "--arg", "x-queue-type=stream"});
  for (int i = 0; i < 5; ++i) ok({"publish", "", "events", "--body", "e" + std::to_string(i)});
  auto from2 = ok({"--json", "consume", "events", "--offset", "2", "--count", "3"});
  auto rows = json_lines(from2.out);
  BOOST_REQUIRE(rows.size() == 3u);
  BOOST_TEST(rows[0]["stream_offset"] == 2);
  BOOST_TEST(rows[2]["body"] == "e4");
  auto since = ok({"consume", "events", "--offset", "-1h", "--count", "5"});
  BOOST_TEST(since.out == "e0\ne1\ne2\ne3\ne4\n");
  ok({"consume", "events", "--offset", "first", "--group", "g", "--count", "2"});
  auto committed = json_lines(ok({"--json", "commit-offset", "events", "h", "3"}).out);
  BOOST_TEST(committed[0][0]["committed_offset"] == 3);
  auto groups = json_lines(ok({"--json", "list", "groups", "events"}).out)[0];
  BOOST_REQUIRE(groups.size() == 2u);
  BOOST_TEST(groups[0]["group"] == "g");
  BOOST_TEST(groups[0]["committed_offset"] == 1);  // its consumer acked two, then left
  BOOST_TEST(groups[0]["lag"] == 3);
  BOOST_TEST(groups[1]["group"] == "h");
  BOOST_TEST(groups[1]["lag"] == 1);
  auto resumed = ok({"consume", "events", "--group", "g", "--count", "1"});
  BOOST_TEST(resumed.out == "e2\n");
  auto queues = json_lines(ok({"--json", "list", "queues"}).out)[0];
  BOOST_TEST(queues[0]["type"] == "stream");
  BOOST_TEST(queues[0]["first_offset"] == 0);
  BOOST_TEST(queues[0]["last_offset"] == 4);
  auto bad = ctl({"consume", "events", "--offset", "yesterday"});
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(bad.err.find("'yesterday'") != std::string::npos, bad.err);
  auto refused = ctl({"delete-queue", "events"});
  BOOST_TEST(refused.exit_code == 1);
  BOOST_TEST(refused.err.find("PRECONDITION_FAILED") != std::string::npos, refused.err);
  BOOST_TEST(refused.err.find("'g' (lag") != std::string::npos, refused.err);
  ok({"delete-queue", "events", "--force"});
  BOOST_TEST(json_lines(ok({"--json", "list", "queues"}).out)[0].empty());
}

BOOST_AUTO_TEST_CASE(an_empty_name_prints_the_generated_one) {
  auto r = ok({"declare-queue", ""});
  BOOST_TEST(r.out.rfind("amq.gen-", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(publish_reads_one_message_per_line_and_prints_each_id) {
  ok({"declare-queue", "q"});
  std::string input;
  for (int i = 0; i < 5000; ++i) input += "line " + std::to_string(i) + "\n";
  auto r = ok({"publish", "", "q"}, input);
  BOOST_TEST(std::count(r.out.begin(), r.out.end(), '\n') == 5000);
  auto consumed = ok({"consume", "q", "--count", "5000"});
  BOOST_TEST(consumed.out == input);
}

BOOST_AUTO_TEST_CASE(list_queues_json_has_the_contract_fields) {
  ok({"declare-queue", "q", "--durable", "--arg", "x-max-length=10"});
  ok({"publish", "", "q", "--body", "x"});
  auto rows = json::parse(ok({"--json", "list", "queues"}).out);
  BOOST_REQUIRE(rows.size() == 1u);
  auto q = rows[0];
  BOOST_TEST(q["name"] == "q");
  BOOST_TEST(q["vhost"] == "/");
  BOOST_TEST(q["durable"] == true);
  BOOST_TEST(q["exclusive"] == false);
  BOOST_TEST(q["auto_delete"] == false);
  BOOST_TEST(q["messages_ready"] == 1);
  BOOST_TEST(q["messages_unacked"] == 0);
  BOOST_TEST(q["consumers"] == 0);
  BOOST_TEST(q["arguments"]["x-max-length"] == 10);
}

BOOST_AUTO_TEST_CASE(stats_json_counts_traffic_and_shows_no_rates_when_idle) {
  ok({"declare-queue", "q", "--durable"});
  ok({"publish", "", "q", "--persistent"}, "aa\nbbb\nc\n");
  BOOST_TEST(ok({"get", "q"}).out == "aa\n");
  auto reports = json_lines(ok({"--json", "stats", "--interval", "0.2"}).out);
  BOOST_REQUIRE(reports.size() == 1u);
  auto r = reports[0];
  BOOST_TEST(r["interval_s"].get<double>() > 0);
  BOOST_TEST(r["rss_bytes"].get<uint64_t>() > 0u);
  BOOST_REQUIRE(r["queues"].size() == 1u);
  auto q = r["queues"][0];
  BOOST_TEST(q["name"] == "q");
  BOOST_TEST(q["published"] == 3);
  BOOST_TEST(q["delivered"] == 1);
  BOOST_TEST(q["acked"] == 1);
  BOOST_TEST(q["redelivered"] == 0);
  BOOST_TEST(q["bytes_in"] == 6);
  BOOST_TEST(q["bytes_out"] == 2);
  BOOST_TEST(q["ready"] == 2);
  BOOST_TEST(q["unacked"] == 0);
  BOOST_TEST(q["segments"] == 1);
  BOOST_TEST(q["bytes_on_disk"].get<uint64_t>() > 0u);
  // Nothing happened between the two readings.
  BOOST_TEST(q["published_per_s"] == 0.0);
  BOOST_TEST(q["delivered_per_s"] == 0.0);
  BOOST_TEST(r["totals"]["ready"] == 2);
  BOOST_TEST(r["totals"]["published_per_s"] == 0.0);
  // The stats command's own connection is the only one.
  BOOST_REQUIRE(r["connections"].size() == 1u);
  BOOST_TEST(r["connections"][0]["name"] == "warrenctl");
}

BOOST_AUTO_TEST_CASE(stats_watch_reports_rates_while_messages_flow) {
  ok({"declare-queue", "q"});
  int out_fd = -1;
  pid_t pid =
      warren::test::spawn_command({WARRENCTL_PATH, "--port", std::to_string(node.port()), "--json",
                                   "stats", "--watch", "--reports", "2", "--interval", "2"},
                                  out_fd);
  // Publish without pause until the two reports are out, so every interval sees traffic.
  std::string lines;
  for (int i = 0; i < 100; ++i) lines += "m\n";
  uint64_t published = 0;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    ok({"publish", "", "q"}, lines);
    published += 100;
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(out_fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  close(out_fd);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  auto reports = json_lines(out);
  BOOST_REQUIRE(reports.size() == 2u);
  for (const auto& r : reports) {
    BOOST_REQUIRE(r["queues"].size() == 1u);
    double rate = r["queues"][0]["published_per_s"];
    double seconds = r["interval_s"];
    BOOST_TEST(rate > 0);
    BOOST_TEST(rate * seconds <= static_cast<double>(published) + 0.5);
    BOOST_TEST(r["totals"]["published_per_s"].get<double>() == rate);
  }
}

BOOST_AUTO_TEST_CASE(stats_prints_a_table_for_people) {
  ok({"declare-queue", "q"});
  auto out = ok({"stats", "--interval", "0.2"}).out;
  BOOST_TEST(out.find("node: up ") == 0u);
  BOOST_TEST(out.find("queue  ready  unacked  consumers  enqueued") != std::string::npos);
  BOOST_TEST(out.find("connection  peer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(exchanges_bind_to_exchanges) {
  ok({"declare-exchange", "src", "--type", "topic"});
  ok({"declare-exchange", "dst", "--type", "fanout"});
  ok({"declare-queue", "q"});
  ok({"bind", "dst", "q"});
  ok({"bind", "src", "dst", "--key", "a.#", "--to-exchange"});
  ok({"publish", "src", "a.b", "--body", "through"});
  auto got = json::parse(ok({"--json", "get", "q"}).out);
  BOOST_TEST(got.dump().find("through") != std::string::npos, got.dump());
  bool listed = false;
  for (auto& b : json::parse(ok({"--json", "list", "bindings"}).out))
    if (b["exchange"] == "src" && b["queue"] == "dst" && b["destination_type"] == "exchange")
      listed = true;
  BOOST_TEST(listed);
  ok({"unbind", "src", "dst", "--key", "a.#", "--to-exchange"});
  ok({"publish", "src", "a.b", "--body", "dropped"});
  BOOST_TEST(ok({"--json", "get", "q"}).out.find("dropped") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(list_exchanges_and_bindings_json) {
  ok({"declare-exchange", "logs", "--type", "topic", "--durable"});
  ok({"declare-queue", "q"});
  ok({"bind", "logs", "q", "--key", "a.#"});
  auto exchanges = json::parse(ok({"--json", "list", "exchanges"}).out);
  bool found = false;
  for (auto& e : exchanges)
    if (e["name"] == "logs") {
      found = true;
      BOOST_TEST(e["type"] == "topic");
      BOOST_TEST(e["durable"] == true);
      BOOST_TEST(e["vhost"] == "/");
    }
  BOOST_TEST(found);
  auto bindings = json::parse(ok({"--json", "list", "bindings"}).out);
  found = false;
  for (auto& b : bindings)
    if (b["exchange"] == "logs") {
      found = true;
      BOOST_TEST(b["queue"] == "q");
      BOOST_TEST(b["key"] == "a.#");
      BOOST_TEST(b["arguments"].is_object());
    }
  BOOST_TEST(found);
}

BOOST_AUTO_TEST_CASE(get_json_has_the_message_fields) {
  ok({"declare-queue", "q"});
  auto id = ok({"publish", "", "q", "--body", "b", "--header", "n=3", "--header", "s=x"}).out;
  id.pop_back();
  auto rows = json_lines(ok({"--json", "get", "q"}).out);
  BOOST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0]["body"] == "b");
  BOOST_TEST(rows[0]["exchange"] == "");
  BOOST_TEST(rows[0]["routing_key"] == "q");
  BOOST_TEST(rows[0]["redelivered"] == false);
  BOOST_TEST(rows[0]["message_id"] == id);
  BOOST_TEST(rows[0]["headers"]["n"] == 3);
  BOOST_TEST(rows[0]["headers"]["s"] == "x");
}

BOOST_AUTO_TEST_CASE(get_requeue_puts_messages_back_redelivered) {
  ok({"declare-queue", "q"});
  ok({"publish", "", "q"}, "1\n2\n");
  BOOST_TEST(ok({"get", "q", "--count", "2", "--requeue"}).out == "1\n2\n");
  auto rows = json_lines(ok({"--json", "get", "q", "--count", "5"}).out);
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0]["body"] == "1");
  BOOST_TEST(rows[0]["redelivered"] == true);
}

BOOST_AUTO_TEST_CASE(consume_stops_after_the_idle_timeout) {
  ok({"declare-queue", "q"});
  ok({"publish", "", "q"}, "a\nb\n");
  auto r = ok({"consume", "q", "--timeout", "0.3"});
  BOOST_TEST(r.out == "a\nb\n");
  auto rows = json::parse(ok({"--json", "list", "queues"}).out);
  BOOST_TEST(rows[0]["messages_ready"] == 0);
  BOOST_TEST(rows[0]["messages_unacked"] == 0);
}

BOOST_AUTO_TEST_CASE(consume_count_leaves_the_rest_in_the_queue) {
  ok({"declare-queue", "q"});
  ok({"publish", "", "q"}, "1\n2\n3\n4\n");
  BOOST_TEST(ok({"consume", "q", "--count", "2", "--prefetch", "10"}).out == "1\n2\n");
  auto rows = json::parse(ok({"--json", "list", "queues"}).out);
  BOOST_TEST(rows[0]["messages_ready"] == 2);
}

BOOST_AUTO_TEST_CASE(lookup_finds_a_held_message_by_id) {
  ok({"declare-queue", "q"});
  auto id = ok({"publish", "", "q", "--body", "needle"}).out;
  id.pop_back();
  auto row = json::parse(ok({"--json", "lookup", id}).out);
  BOOST_TEST(row["body"] == "needle");
  BOOST_TEST(row["queue"] == "q");
  BOOST_TEST(row["state"] == "ready");
  auto missing = ctl({"lookup", "00000000-0000-0000-0000000000000000"});
  BOOST_TEST(missing.exit_code == 1);
  BOOST_TEST(missing.err.rfind("error: NOT_FOUND: ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(broker_errors_print_code_and_exit_1) {
  auto r = ctl({"purge-queue", "nope"});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err == "error: NOT_FOUND: no queue 'nope' in vhost '/'\n");
  r = ctl({"declare-queue", "amq.x"});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.rfind("error: ACCESS_REFUSED: ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_2) {
  BOOST_TEST(ctl({"frobnicate"}).exit_code == 2);
  BOOST_TEST(ctl({"declare-exchange", "x"}).exit_code == 2);  // --type missing
  BOOST_TEST(ctl({"list", "everything"}).exit_code == 2);
  BOOST_TEST(ctl({"declare-queue", "q", "--arg", "novalue"}).exit_code == 2);
  BOOST_TEST(ctl({"lookup", "not-an-id"}).exit_code == 2);
}

// Names far beyond 255 bytes through every command that takes one, by a user with no tags who
// holds permissions in their own vhost: each is refused naming the length, and the node stays up
// (the permission check once ran a recursive regex over the name first and overflowed the stack).
BOOST_AUTO_TEST_CASE(long_names_are_refused_at_the_door_and_the_node_stays_up) {
  ok({"add-vhost", "own"});
  ok({"add-user", "plain", "plain-secret"});
  ok({"set-permissions", "plain", ".*", ".*", ".*", "--vhost", "own"});
  std::string huge(32000, 'q');
  std::vector<std::vector<std::string>> commands{{"declare-queue", huge},
                                                 {"declare-exchange", huge, "--type", "direct"},
                                                 {"get", huge},
                                                 {"peek", huge},
                                                 {"purge-queue", huge},
                                                 {"delete-queue", huge},
                                                 {"bind", "amq.direct", huge, "--key", "k"},
                                                 {"bind", huge, "q", "--key", "k"},
                                                 {"publish", huge, "k", "--body", "x"}};
  for (auto args : commands) {
    args.insert(args.begin(), {"--vhost", "own", "--user", "plain", "--password", "plain-secret"});
    auto r = ctl(args);
    BOOST_TEST(r.exit_code == 1, args[6] << ": " << r.err);
    BOOST_TEST(r.err.find("32000 bytes") != std::string::npos, args[6] << ": " << r.err);
    BOOST_REQUIRE_MESSAGE(node.alive(), args[6] << " killed the node");
  }
  ok({"declare-queue", "still-up"});
}

// An empty token (an unset variable in a script) is a mistake, not a login as guest.
BOOST_AUTO_TEST_CASE(an_empty_token_is_an_error_not_a_login) {
  ok({"declare-queue", "q"});
  auto r = ctl({"--token", "", "publish", "", "q", "--body", "x"});
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.err.find("--token is empty") != std::string::npos, r.err);
  setenv("WARREN_TOKEN", "", 1);
  r = ctl({"publish", "", "q", "--body", "x"});
  unsetenv("WARREN_TOKEN");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.err.find("WARREN_TOKEN is set but empty") != std::string::npos, r.err);
  BOOST_TEST(ok({"get", "q"}).out.empty());
}

BOOST_AUTO_TEST_CASE(mandatory_unroutable_publish_reports_returned) {
  auto r = ctl({"publish", "amq.direct", "nobody", "--body", "x", "--mandatory"});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.out.find("returned") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(vhosts_can_be_added_used_and_deleted) {
  ok({"add-vhost", "v2"});
  BOOST_TEST(ok({"list", "vhosts"}).out.find("v2") != std::string::npos);
  ok({"--vhost", "v2", "declare-queue", "inside"});
  auto rows = json::parse(ok({"--vhost", "v2", "--json", "list", "queues"}).out);
  BOOST_TEST(rows[0]["vhost"] == "v2");
  ok({"delete-vhost", "v2"});
  auto r = ctl({"--vhost", "v2", "list", "queues"});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.rfind("error: NOT_FOUND: ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(an_unreachable_node_is_a_clear_error) {
  auto port = node.port();
  node.stop();
  auto r =
      warren::test::run_command({WARRENCTL_PATH, "--port", std::to_string(port), "list", "queues"});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.rfind("error: DISCONNECTED: ", 0) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
