// Damaged data directories with a real warren-node: stray files, unreadable queue folders,
// truncated or missing metadata, a descriptor limit far below the number of queues, and
// `warren-node --check` / `--check --repair` on damaged, sound and busy data dirs.
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

// --- warren-node --check and --check --repair ---------------------------------------------

namespace {

// warren-node --check [--repair] on `data_dir`.
warren::test::command_result check_dir(const std::string& data_dir, bool repair = false) {
  std::vector<std::string> argv{"/usr/bin/timeout", "60", node_binary(), "--check"};
  if (repair) argv.push_back("--repair");
  argv.insert(argv.end(), {"--data-dir", data_dir});
  return run_command(argv);
}

// Every file of the data dir but its lock, which a check takes as a node does.
std::map<std::string, std::string> snapshot_but_lock(const std::string& data_dir) {
  auto files = snapshot(data_dir);
  files.erase(data_dir + "/lock");
  return files;
}

void flip_byte(const fs::path& file, size_t offset) {
  auto bytes = read_bytes(file);
  BOOST_REQUIRE(offset < bytes.size());
  bytes[offset] ^= 0x40;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// The segment of the data dir that holds `text`.
fs::path segment_holding(const std::string& data_dir, const std::string& text) {
  for (const auto& seg : segments_of(data_dir))
    if (read_bytes(seg).find(text) != std::string::npos) return seg;
  BOOST_FAIL("no segment holds " + text);
  return {};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(check_names_a_damaged_segment_and_its_cost_and_changes_nothing) {
  temp_dir dir;
  make_queue(dir.path(), 200);
  auto seg = segments_of(dir.path()).at(0);
  flip_byte(seg, fs::file_size(seg) / 2);
  auto before = snapshot_but_lock(dir.path());
  auto r = check_dir(dir.path());
  BOOST_TEST(r.exit_code == 1, r.out << r.err);
  BOOST_TEST(has(r.out, "DAMAGED " + seg.string() + ": damaged records at offset"), r.out);
  BOOST_TEST(has(r.out, "the messages in them are lost"), r.out);
  BOOST_TEST(has(r.out, "OK metadata"), r.out);
  BOOST_TEST((snapshot_but_lock(dir.path()) == before));
}

BOOST_AUTO_TEST_CASE(check_names_a_damaged_metadata_record_that_the_node_refuses) {
  temp_dir dir;
  const std::string marker = "a-value-only-found-in-the-queue-record";
  {
    node_process node({}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    auto options = durable;
    options.arguments = {{"note", field_value::of_text(marker)}};
    ch->queue_declare("noted", options);
    node.stop();
  }
  auto mdb = dir.path() + "/meta/data.mdb";
  auto bytes = read_bytes(mdb);
  size_t flipped = 0;
  for (auto at = bytes.find(marker); at != std::string::npos; at = bytes.find(marker, at + 1)) {
    bytes[at + marker.size() / 2] ^= 0x01;
    ++flipped;
  }
  BOOST_REQUIRE(flipped >= 1u);
  std::ofstream(mdb, std::ios::binary | std::ios::trunc) << bytes;
  auto before = snapshot_but_lock(dir.path());
  auto r = check_dir(dir.path());
  BOOST_TEST(r.exit_code == 1, r.out << r.err);
  BOOST_TEST(has(r.out, "DAMAGED " + mdb + ": metadata record damaged: table 'queues', key '"),
             r.out);
  BOOST_TEST(has(r.out, "the node refuses to start on it"), r.out);
  BOOST_TEST(has(r.out, "--repair does not repair metadata"), r.out);
  BOOST_TEST((snapshot_but_lock(dir.path()) == before));
  auto start = start_node(dir.path());
  BOOST_TEST(start.exit_code == 1);
  BOOST_TEST(has(start.err, "metadata record damaged: table 'queues'"), start.err);
}

BOOST_AUTO_TEST_CASE(check_of_a_data_dir_in_use_by_a_running_node_is_refused) {
  temp_dir dir;
  node_process node({}, dir.path());
  auto r = check_dir(dir.path());
  BOOST_TEST(r.exit_code == 2, r.out << r.err);
  BOOST_TEST(has(r.out, "in use by another warren-node"), r.out);
  BOOST_TEST(node.alive());
}

BOOST_AUTO_TEST_CASE(check_of_a_sound_data_dir_exits_0) {
  temp_dir dir;
  make_queue(dir.path(), 50);
  auto r = check_dir(dir.path());
  BOOST_TEST(r.exit_code == 0, r.out << r.err);
  BOOST_TEST(!has(r.out, "DAMAGED"), r.out);
  BOOST_TEST(has(r.out, "OK queues: 1 folder(s)"), r.out);
}

// Small segments: "hurt-1" is in the oldest of several (the newest is never moved, as the queue
// numbers its next messages from it).
BOOST_AUTO_TEST_CASE(repair_moves_a_damaged_segment_aside_and_the_node_serves_the_rest) {
  temp_dir dir;
  {
    node_process node({"--segment-bytes", "4096"}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->confirm_select();
    ch->queue_declare("hurt", durable);
    ch->queue_declare("whole", durable);
    publish_confirmed(*ch, "hurt", 200, "hurt-");
    publish_confirmed(*ch, "whole", 200, "whole-");
    node.stop();
  }
  auto seg = segment_holding(dir.path(), "hurt-1");
  auto marks = fs::path(seg).replace_extension(".ack");
  flip_byte(seg, fs::file_size(seg) / 2);
  auto seg_bytes = read_bytes(seg);
  auto marks_bytes = read_bytes(marks);
  auto r = check_dir(dir.path(), true);
  BOOST_TEST(r.exit_code == 0, r.out << r.err);
  BOOST_TEST(has(r.out, "MOVED " + seg.string() + " -> " + dir.path() + "/damaged/"), r.out);
  BOOST_TEST(!fs::exists(seg));
  BOOST_TEST(!fs::exists(marks));
  auto queue_id = seg.parent_path().filename().string();
  size_t kept = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() + "/damaged")) {
    if (e.path().filename() == seg.filename()) {
      BOOST_TEST(e.path().parent_path().filename().string() == queue_id);
      BOOST_TEST(e.path().parent_path().parent_path().filename().string() == "queues");
      BOOST_TEST((read_bytes(e.path()) == seg_bytes));
      ++kept;
    }
    if (e.path().filename() == marks.filename()) kept += read_bytes(e.path()) == marks_bytes;
  }
  BOOST_TEST(kept == 2u);
  auto again = check_dir(dir.path());
  BOOST_TEST(again.exit_code == 0, again.out << again.err);
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto whole = drain(*conn, "whole");
  BOOST_REQUIRE(whole.size() == 200u);
  BOOST_TEST(whole.front().body == "whole-0");
  auto hurt = drain(*conn, "hurt");  // the messages of the other segments
  BOOST_TEST(!hurt.empty());
  BOOST_TEST(hurt.size() < 200u);
  BOOST_TEST(hurt.back().body == "hurt-199");
}
