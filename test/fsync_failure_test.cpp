// A disk that fails an fsync, under a real node: test/helpers/fsync_fault.c (LD_PRELOAD) fails
// fsync and fdatasync with EIO for files under one folder once the test arms it. After such a
// failure Linux may have dropped the pages it could not write (PostgreSQL's "fsyncgate"), so
// the queue that owns the folder must confirm nothing more: it nacks what waited, is marked
// unavailable with the reason, and a restart recovers it from what is on disk. Other queues
// carry on.
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

using namespace warren::client;
using namespace warren::test;
namespace fs = std::filesystem;

namespace {

// What a node needs to run under the shim. A sanitized node would refuse a library loaded
// before the ASan runtime; here that is intended.
std::vector<std::string> under_fault_shim(const std::string& trigger) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string asan_options = std::string(asan ? asan : "") + ":verify_asan_link_order=0";
  return {"/usr/bin/env", std::string("LD_PRELOAD=") + FSYNC_FAULT_PATH,
          "WARREN_FAULT_TRIGGER=" + trigger, "ASAN_OPTIONS=" + asan_options};
}

// The queue folders of a data dir.
std::set<std::string> queue_folders(const std::string& data_dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(data_dir + "/queues"))
    if (e.is_directory()) out.insert(e.path().string());
  return out;
}

// The one folder in `after` that is not in `before`.
std::string new_folder(const std::set<std::string>& before, const std::set<std::string>& after) {
  std::vector<std::string> added;
  for (const auto& f : after)
    if (before.count(f) == 0) added.push_back(f);
  BOOST_REQUIRE(added.size() == 1u);
  return added.front();
}

// A data dir on a disk whose syncs fail when armed: the node runs `under()` the shim.
struct failing_disk {
  temp_dir dir;
  std::string trigger = dir.path() + "/armed";
  std::string data = dir.path() + "/data";

  std::vector<std::string> under() const { return under_fault_shim(trigger); }
  // Fails every later fsync of files under `folder`, each after `delay_ms`.
  void arm(const std::string& folder, int delay_ms = 0) const {
    std::ofstream(trigger) << folder << "\n" << delay_ms << "\n";
  }
  void heal() const { fs::remove(trigger); }
};

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

publish_outcome publish_one(channel& ch, const std::string& queue, const std::string& body) {
  return ch.publish_batch({persistent(queue, body)}).get().at(0).outcome;
}

// The management API's view of `queue`: its state and reason, as JSON text.
std::string management_view(const node_process& node, const std::string& queue) {
  auto script =
      "import base64, json, sys, urllib.request\n"
      "r = urllib.request.Request('http://127.0.0.1:" +
      std::to_string(node.http_port()) + "/api/queues/%2F/" + queue +
      "')\n"
      "r.add_header('Authorization', 'Basic ' + base64.b64encode(b'guest:guest').decode())\n"
      "q = json.load(urllib.request.urlopen(r))\n"
      "print(q.get('state'), q.get('reason'))\n";
  auto r = run_command({"/usr/bin/python3", "-c", script});
  BOOST_TEST_INFO(r.err);
  BOOST_REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fsync_failure)

BOOST_AUTO_TEST_CASE(a_failed_fsync_stops_the_queue_and_a_restart_recovers_it) {
  failing_disk disk;
  const auto& data = disk.data;
  {
    node_process node({}, data, disk.under());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->confirm_select();
    ch->queue_declare("q", durable);
    publish_confirmed(*ch, "q", 20, "before");
    auto folder = *queue_folders(data).begin();
    ch->queue_declare("other", durable);
    std::atomic<int> cancels{0};
    std::string cancel_reason;
    auto watcher = conn->open_channel();
    watcher->consume(
        "q", {}, [](const delivery&) {},
        [&](const std::string&, const std::string& reason) {
          cancel_reason = reason;
          ++cancels;
        });

    disk.arm(folder);
    BOOST_TEST((publish_one(*ch, "q", "unsynced") != publish_outcome::routed));
    BOOST_TEST(node.wait_for_log("is unavailable: syncing its files failed"));
    BOOST_TEST(node.log().find("Input/output error") != std::string::npos);
    // Refused from now on, with the reason, and logged once.
    BOOST_TEST((publish_one(*ch, "q", "later") == publish_outcome::rejected));
    BOOST_TEST(count_of(node.log(), "is unavailable") == 1u);
    auto rows = conn->list_queues();
    auto row = std::find_if(rows.begin(), rows.end(), [](auto& r) { return r.name == "q"; });
    BOOST_REQUIRE(row != rows.end());
    BOOST_TEST(row->unavailable.find("syncing its files failed") != std::string::npos);
    BOOST_TEST(row->unavailable.find("Input/output error") != std::string::npos);
    auto api = management_view(node, "q");
    BOOST_TEST(api.find("down syncing its files failed") != std::string::npos, api);
    try {
      conn->open_channel()->get("q");
      BOOST_FAIL("a get from the failed queue succeeded");
    } catch (const error& e) {
      BOOST_TEST(e.code() == "RESOURCE_ERROR");
    }
    for (int i = 0; i < 100 && cancels == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    BOOST_TEST(cancels == 1);
    BOOST_TEST(cancel_reason.find("is unavailable") != std::string::npos);
    // The rest of the node carries on.
    publish_confirmed(*ch, "other", 5);
    node.stop();
  }
  disk.heal();
  node_process node({}, data);
  auto conn = connect_to(node);
  auto back = drain(*conn, "q");
  std::set<std::string> bodies;
  for (const auto& d : back) bodies.insert(d.body);
  for (int i = 0; i < 20; ++i) BOOST_TEST(bodies.count("before" + std::to_string(i)) == 1u);
  BOOST_TEST(bodies.count("later") == 0u);
  BOOST_TEST(drain(*conn, "other").size() == 5u);
  auto ch = conn->open_channel();
  ch->confirm_select();
  publish_confirmed(*ch, "q", 3, "again");
}

BOOST_AUTO_TEST_CASE(a_failed_fsync_stops_a_stream_and_a_restart_recovers_it) {
  failing_disk disk;
  const auto& data = disk.data;
  queue_options stream = durable;
  stream.arguments.push_back({"x-queue-type", field_value::of_text("stream")});
  {
    node_process node({}, data, disk.under());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->confirm_select();
    ch->queue_declare("q", durable);
    auto before = queue_folders(data);
    ch->queue_declare("s", stream);
    publish_confirmed(*ch, "s", 10, "kept");
    disk.arm(new_folder(before, queue_folders(data)));
    BOOST_TEST((publish_one(*ch, "s", "unsynced") != publish_outcome::routed));
    BOOST_TEST(node.wait_for_log("stream 's' in vhost '/' is unavailable: syncing its files"));
    BOOST_TEST((publish_one(*ch, "s", "later") == publish_outcome::rejected));
    publish_confirmed(*ch, "q", 5);
    node.stop();
  }
  disk.heal();
  node_process node({}, data);
  auto conn = connect_to(node);
  auto rows = conn->list_queues();
  for (const auto& r : rows) BOOST_TEST(r.unavailable.empty(), r.name << ": " << r.unavailable);
  auto s = std::find_if(rows.begin(), rows.end(), [](auto& r) { return r.name == "s"; });
  BOOST_REQUIRE(s != rows.end());
  BOOST_TEST(s->messages_ready >= 10u);
  BOOST_TEST(drain(*conn, "q").size() == 5u);
}

// A queue's folder is new until its parent (queues/) is synced. When that sync fails, a later
// one that passes proves nothing (the same as for a file): the queue stops, it does not take
// the next publish on trust.
BOOST_AUTO_TEST_CASE(a_failed_sync_of_a_new_queue_folder_stops_the_queue) {
  failing_disk disk;
  const auto& data = disk.data;
  node_process node({}, data, disk.under());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->confirm_select();
  ch->queue_declare("q", durable);
  BOOST_REQUIRE(queue_folders(data).empty());  // made with its first message
  disk.arm(data + "/queues");
  BOOST_TEST((publish_one(*ch, "q", "first") != publish_outcome::routed));
  disk.heal();
  BOOST_TEST(node.wait_for_log("is unavailable: syncing its files failed"));
  BOOST_TEST((publish_one(*ch, "q", "second") == publish_outcome::rejected));
}

// A queue whose messages are partly paged out to disk fails a sync; its in-memory head then
// expires. The queue used to go on paging in from the store it had dropped, and its actor spun
// forever: the node stopped answering for that queue.
BOOST_AUTO_TEST_CASE(a_failed_fsync_with_paged_messages_leaves_the_queue_answering) {
  failing_disk disk;
  const auto& data = disk.data;
  node_process node({"--queue-memory-per-queue", "16384"}, data, disk.under());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->confirm_select();
  queue_options ttl = durable;
  ttl.arguments = {{"x-message-ttl", field_value::of_int(1000)}};
  ch->queue_declare("q", ttl);
  std::vector<outbound_message> batch;
  for (int i = 0; i < 200; ++i) batch.push_back(persistent("q", std::string(1024, 'p')));
  for (const auto& r : ch->publish_batch(std::move(batch)).get())
    BOOST_REQUIRE(r.outcome == publish_outcome::routed);
  disk.arm(*queue_folders(data).begin());
  BOOST_TEST((publish_one(*ch, "q", "unsynced") != publish_outcome::routed));
  BOOST_TEST(node.wait_for_log("is unavailable: syncing its files failed"));
  // Past the TTL: the head expires on the queue's ticks.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto rows = conn->list_queues();
  auto row = std::find_if(rows.begin(), rows.end(), [](auto& r) { return r.name == "q"; });
  BOOST_REQUIRE(row != rows.end());
  BOOST_TEST(row->unavailable.find("syncing its files failed") != std::string::npos);
  BOOST_TEST((publish_one(*ch, "q", "later") == publish_outcome::rejected));
}

// LMDB syncs its data file before it writes the meta page that makes a transaction count, so a
// failed sync aborts the change: it is refused with the reason, never acknowledged, and leaves
// nothing behind that a retry would take for done (a retried declare used to be answered at once
// from memory, with nothing stored, and the queue and its confirmed messages were gone after a
// restart).
BOOST_AUTO_TEST_CASE(a_failed_metadata_sync_refuses_the_change_and_a_retry_stores_it) {
  failing_disk disk;
  const auto& data = disk.data;
  {
    node_process node({}, data, disk.under());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare("kept", durable);
    ch->queue_declare("deleted", durable);
    disk.arm(data + "/meta");
    try {
      ch->queue_declare("refused", durable);
      BOOST_FAIL("a declare was acknowledged while its metadata could not be synced");
    } catch (const error& e) {
      BOOST_TEST(e.text().find("metadata could not be stored") != std::string::npos, e.text());
      BOOST_TEST(e.text().find("Input/output error") != std::string::npos, e.text());
    }
    BOOST_TEST(node.alive());
    for (const auto& row : conn->list_queues()) BOOST_TEST(row.name != "refused");
    // A delete that could not be stored is refused too; the queue is gone all the same, and
    // its erase is written with the next commit that succeeds.
    auto deleter = conn->open_channel();
    BOOST_CHECK_THROW(deleter->queue_delete("deleted"), error);
    exchange_options durable_exchange;
    durable_exchange.durable = true;
    BOOST_CHECK_THROW(conn->open_channel()->exchange_declare("ex", "direct", durable_exchange),
                      error);
    BOOST_CHECK_THROW(conn->open_channel()->queue_bind("kept", "amq.direct", "k"), error);
    disk.heal();
    auto retry = conn->open_channel();
    retry->queue_declare("refused", durable);
    retry->exchange_declare("ex", "direct", durable_exchange);
    retry->queue_bind("kept", "amq.direct", "k");
    retry->confirm_select();
    publish_confirmed(*retry, "refused", 3);
    node.stop();
  }
  node_process node({}, data);
  auto conn = connect_to(node);
  std::set<std::string> names;
  for (const auto& row : conn->list_queues()) names.insert(row.name);
  BOOST_TEST(names.count("kept") == 1u);
  BOOST_TEST(names.count("refused") == 1u);
  BOOST_TEST(names.count("deleted") == 0u);
  auto exchanges = conn->list_exchanges();
  BOOST_TEST(std::count_if(exchanges.begin(), exchanges.end(),
                           [](auto& e) { return e.name == "ex"; }) == 1);
  auto bindings = conn->list_bindings();
  BOOST_TEST(std::count_if(bindings.begin(), bindings.end(), [](auto& b) {
               return b.exchange == "amq.direct" && b.queue == "kept" && b.key == "k";
             }) == 1);
  BOOST_TEST(drain(*conn, "refused").size() == 3u);
}

// While a queue's record is being committed, nothing may treat the queue as there: a publish
// confirmed into it, or a second declare answered, and then the commit failed. The queue used
// to be taken back with its files, confirmed messages and all.
BOOST_AUTO_TEST_CASE(a_queue_whose_record_fails_takes_no_confirmed_message_with_it) {
  failing_disk disk;
  const auto& data = disk.data;
  size_t confirmed = 0;
  bool redeclared = false;
  {
    node_process node({}, data, disk.under());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->confirm_select();
    disk.arm(data + "/meta", 1500);  // the declare's commit fails 1.5 s from now
    std::thread declarer(
        [&] { BOOST_CHECK_THROW(conn->open_channel()->queue_declare("late", durable), error); });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    std::vector<outbound_message> batch;
    for (int i = 0; i < 5; ++i) batch.push_back(persistent("late", "m" + std::to_string(i)));
    for (const auto& r : ch->publish_batch(std::move(batch)).get())
      confirmed += r.outcome == publish_outcome::routed ? 1 : 0;
    try {
      conn->open_channel()->queue_declare("late", durable);
      redeclared = true;
    } catch (const error&) {
    }
    declarer.join();
    BOOST_TEST(node.alive());
    node.stop();
  }
  disk.heal();
  node_process node({}, data);
  auto conn = connect_to(node);
  bool exists = false;
  for (const auto& row : conn->list_queues()) exists = exists || row.name == "late";
  BOOST_TEST(exists == (redeclared || confirmed > 0));
  if (exists) BOOST_TEST(drain(*conn, "late").size() == confirmed);
}

// A refused bind leaves no trace: the auto-delete exchange it was refused on is not deleted as
// if its last binding had gone (it never had one), and a second bind of the same key waits for
// the first one's commit instead of being answered at once.
BOOST_AUTO_TEST_CASE(a_refused_bind_takes_nothing_else_with_it) {
  failing_disk disk;
  const auto& data = disk.data;
  bool second_bound = false;
  {
    node_process node({}, data, disk.under());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare("q", durable);
    exchange_options auto_delete;
    auto_delete.durable = true;
    auto_delete.auto_delete = true;
    ch->exchange_declare("ad", "direct", auto_delete);
    disk.arm(data + "/meta", 1000);
    std::thread first(
        [&] { BOOST_CHECK_THROW(conn->open_channel()->queue_bind("q", "ad", "k"), error); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    try {
      conn->open_channel()->queue_bind("q", "ad", "k");
      second_bound = true;
    } catch (const error&) {
    }
    first.join();
    disk.heal();
    conn->open_channel()->queue_declare("after", durable);  // a commit that succeeds
    node.stop();
  }
  node_process node({}, data);
  auto conn = connect_to(node);
  auto exchanges = conn->list_exchanges();
  BOOST_TEST(std::count_if(exchanges.begin(), exchanges.end(),
                           [](auto& e) { return e.name == "ad"; }) == 1);
  auto bindings = conn->list_bindings();
  auto bound = std::count_if(bindings.begin(), bindings.end(),
                             [](auto& b) { return b.exchange == "ad" && b.queue == "q"; });
  BOOST_TEST(bound == (second_bound ? 1 : 0));
}

// Changes kept from failed commits are kept once per record: a client retrying a refused
// declare for as long as the disk fails does not grow what waits to be written.
BOOST_AUTO_TEST_CASE(changes_kept_for_a_failing_disk_stay_one_per_record) {
  failing_disk disk;
  const auto& data = disk.data;
  node_process node({}, data, disk.under());
  auto conn = connect_to(node);
  disk.arm(data + "/meta");
  for (int i = 0; i < 20; ++i)
    BOOST_CHECK_THROW(conn->open_channel()->queue_declare("retried", durable), error);
  disk.heal();
  conn->open_channel()->queue_declare("after", durable);
  BOOST_TEST(node.wait_for_log("change(s) kept from a failed commit are stored now"));
  auto log = node.log();
  auto at = log.rfind(" change(s) kept from a failed commit are stored now");
  auto start = log.rfind(' ', at - 1) + 1;
  auto kept = std::stoul(log.substr(start, at - start));
  BOOST_TEST(kept <= 2u, log.substr(start, at - start));
}

BOOST_AUTO_TEST_SUITE_END()

// A vhost deleted while a declare in it is being committed waits for that commit, then goes,
// and answers: before, the delete waited on the commit and its answer was lost, so the node
// never finished it and the vhost came back after a restart.
BOOST_AUTO_TEST_CASE(a_vhost_deleted_during_a_commit_goes_and_answers) {
  failing_disk disk;
  const auto& data = disk.data;
  {
    node_process node({}, data, disk.under());
    auto admin = connect_to(node);
    admin->add_vhost("doomed");
    admin->set_permissions({"guest", "doomed", ".*", ".*", ".*"});
    connect_options in_doomed;
    in_doomed.port = node.port();
    in_doomed.vhost = "doomed";
    auto conn = connection::open(in_doomed);
    disk.arm(data + "/meta", 3000);  // the declare's commit fails, three seconds from now
    auto declared = std::async(std::launch::async, [&] {
      try {
        conn->open_channel()->queue_declare("q", durable);
        return true;
      } catch (const error&) {
        return false;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    disk.heal();  // the delete's own commit succeeds
    auto deleted = std::async(std::launch::async, [&] { admin->delete_vhost("doomed"); });
    bool answered = deleted.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    if (!answered) node.kill9();  // the clients' calls end with the node
    BOOST_REQUIRE(answered);
    BOOST_CHECK_NO_THROW(deleted.get());
    BOOST_TEST(!declared.get());  // it was under way when the delete came
    node.stop();
  }
  node_process node({}, data);
  auto vhosts = connect_to(node)->list_vhosts();
  BOOST_TEST((std::find(vhosts.begin(), vhosts.end(), "doomed") == vhosts.end()));
}
