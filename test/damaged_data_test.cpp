// Damaged data directories with a real warren-node: stray files, unreadable queue folders,
// truncated or missing metadata, and a descriptor limit far below the number of queues.
//
// The rule: a damaged or unexpected file costs at most what it damaged, is reported, and is
// never written over; a node that cannot trust its metadata refuses to start and says why.
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "subprocess.hpp"
#include "warren/client_error.hpp"

#include <filesystem>
#include <fstream>
#include <map>

using namespace warren::client;
using namespace warren::test;
namespace fs = std::filesystem;

namespace {

uint64_t ready_in(connection& conn, const std::string& queue) {
  for (const auto& q : conn.list_queues())
    if (q.name == queue) return q.messages_ready;
  return 0;
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = read_bytes(e.path());
  return out;
}

// Runs a node that is expected to refuse to start. One that starts anyway is stopped after a
// minute (a guard against hanging the suite, not a speed expectation) and exits with 124.
warren::test::command_result start_node(const std::string& data_dir) {
  return run_command({"/usr/bin/timeout", "60", node_binary(), "--port", "0", "--amqp-port", "0",
                      "--data-dir", data_dir});
}

}  // namespace

// The reproduction: recovery used to fail on the stray name, the queue showed empty,
// and the next publish wrote over the first segment.
BOOST_AUTO_TEST_CASE(stray_files_in_a_queue_folder_cost_nothing_and_are_never_written_over) {
  temp_dir dir;
  auto folder = make_queue(dir.path(), 2000);
  std::ofstream(folder + "/99999999999999999999999.seg") << "stray";
  fs::create_directory(folder + "/00000000000000050000.seg");
  auto before = snapshot(folder);
  {
    node_process node({}, dir.path());
    BOOST_TEST(node.log().find("99999999999999999999999.seg ignored") != std::string::npos);
    auto conn = connect_to(node);
    BOOST_REQUIRE(ready_in(*conn, "q") == 2000u);
    auto ch = conn->open_channel();
    ch->confirm_select();
    publish_confirmed(*ch, "q", 100, "later");
    node.kill9();
  }
  for (const auto& [path, bytes] : before) BOOST_TEST_REQUIRE((read_bytes(path) == bytes));
  fs::remove(folder + "/99999999999999999999999.seg");
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto all = drain(*conn, "q");
  BOOST_REQUIRE(all.size() == 2100u);
  BOOST_TEST(all.front().body == "m0");
  BOOST_TEST(all.back().body == "later99");
}

BOOST_AUTO_TEST_CASE(a_queue_whose_folder_cannot_be_read_is_unavailable_never_empty) {
  temp_dir dir;
  auto folder = make_queue(dir.path(), 50);
  fs::rename(folder, folder + ".aside");
  std::ofstream(folder) << "a file where the folder should be";
  {
    node_process node({}, dir.path());
    BOOST_TEST(node.log().find("queue 'q' in vhost '/' is unavailable") != std::string::npos);
    auto conn = connect_to(node);
    auto rows = conn->list_queues();
    BOOST_REQUIRE(rows.size() == 1u);
    BOOST_TEST(rows[0].unavailable.find("could not be loaded") != std::string::npos);
    auto ch = conn->open_channel();
    try {
      ch->get("q");
      BOOST_FAIL("get from an unavailable queue succeeded");
    } catch (const error& e) {
      BOOST_TEST(e.code() == "RESOURCE_ERROR");
      BOOST_TEST(e.text().find("is unavailable") != std::string::npos);
    }
    auto pub = conn->open_channel();
    pub->confirm_select();
    auto results = pub->publish_batch({persistent("q", "refused")}).get();
    BOOST_TEST((results.at(0).outcome == publish_outcome::rejected));
    // The rest of the node works.
    pub->queue_declare("other", durable);
    publish_confirmed(*pub, "other", 3);
    node.stop();
  }
  BOOST_TEST(read_bytes(folder) == "a file where the folder should be");
  fs::remove(folder);
  fs::rename(folder + ".aside", folder);
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  BOOST_TEST(drain(*conn, "q").size() == 50u);
  BOOST_TEST(drain(*conn, "other").size() == 3u);
}

BOOST_AUTO_TEST_CASE(truncated_metadata_is_refused_with_its_path_and_nothing_is_touched) {
  temp_dir dir;
  make_queue(dir.path(), 100);
  auto mdb = dir.path() + "/meta/data.mdb";
  auto whole = read_bytes(mdb);
  fs::resize_file(mdb, whole.size() / 2);
  auto before = snapshot(dir.path() + "/queues");
  auto r = start_node(dir.path());
  BOOST_TEST(r.exit_code == 1);  // refused, not killed by SIGBUS
  BOOST_TEST(r.err.find(mdb + " is truncated") != std::string::npos, r.err);
  BOOST_TEST((snapshot(dir.path() + "/queues") == before));
  std::ofstream(mdb, std::ios::binary | std::ios::trunc) << whole;  // restored from a backup
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  BOOST_TEST(drain(*conn, "q").size() == 100u);
}

BOOST_AUTO_TEST_CASE(missing_or_emptied_metadata_over_queue_folders_is_refused) {
  temp_dir dir;
  make_queue(dir.path(), 100);
  auto mdb = dir.path() + "/meta/data.mdb";
  auto whole = read_bytes(mdb);
  auto before = snapshot(dir.path() + "/queues");
  for (bool deleted : {true, false}) {
    if (deleted)
      fs::remove(mdb);
    else
      fs::resize_file(mdb, 0);
    auto r = start_node(dir.path());
    BOOST_TEST(r.exit_code == 1);
    BOOST_TEST(
        r.err.find("refusing to start as a new broker over their messages") != std::string::npos,
        r.err);
    BOOST_TEST((snapshot(dir.path() + "/queues") == before));
    std::ofstream(mdb, std::ios::binary | std::ios::trunc) << whole;
  }
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  BOOST_TEST(drain(*conn, "q").size() == 100u);
}

// One descriptor per segment used to abort start-up past the limit, and kill queue actors at
// run time. Now files are opened through a bounded cache.
BOOST_AUTO_TEST_CASE(two_thousand_queues_load_and_take_publishes_under_ulimit_1024) {
  temp_dir dir;
  const int queues = 2000;
  {
    node_process node({}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->confirm_select();
    for (int q = 0; q < queues; ++q) ch->queue_declare("q" + std::to_string(q), durable);
    std::vector<outbound_message> batch;
    for (int q = 0; q < queues; ++q) batch.push_back(persistent("q" + std::to_string(q), "first"));
    for (const auto& r : ch->publish_batch(std::move(batch)).get())
      BOOST_REQUIRE(r.outcome == publish_outcome::routed);
    node.stop();
  }
  node_process node({}, dir.path(), {"/usr/bin/prlimit", "--nofile=1024:1024", "--"});
  auto conn = connect_to(node);
  size_t loaded = 0;
  for (const auto& q : conn->list_queues()) loaded += q.messages_ready;
  BOOST_TEST(loaded == static_cast<size_t>(queues));
  auto ch = conn->open_channel();
  ch->confirm_select();
  std::vector<outbound_message> batch;
  for (int q = 0; q < queues; ++q) batch.push_back(persistent("q" + std::to_string(q), "second"));
  size_t confirmed = 0;
  for (const auto& r : ch->publish_batch(std::move(batch)).get())
    confirmed += r.outcome == publish_outcome::routed;
  BOOST_TEST(confirmed == static_cast<size_t>(queues));
  BOOST_TEST(node.alive());
}
