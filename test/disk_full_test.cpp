// A full disk with real node processes on a small tmpfs (mounted, so it needs root): publishes
// are refused once the disk is full and everything confirmed survives a kill -9, and the disk
// alarm holds publishers back before that until space returns. Its own suite because it needs
// a mount of its own and fills it, where the other durability suites use plain folders.
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace warren::client;
using namespace warren::test;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(disk_full)

// Needs root to mount a small tmpfs (CI and the development machines run as root).
BOOST_AUTO_TEST_CASE(a_full_disk_refuses_publishes_keeps_what_was_confirmed_and_recovers) {
  warren::test::tmpfs_mount mount_point("3m");
  auto ballast = mount_point.path() + "/ballast";
  {
    std::ofstream out(ballast, std::ios::binary);
    std::string chunk(64 * 1024, 'b');
    for (int i = 0; i < 8; ++i) out << chunk;  // 512 KiB to give back later
  }
  // No disk alarm here: this test is about what happens when the disk does fill up.
  node_process node({"--disk-free-limit", "0"}, mount_point.path() + "/data");
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("q", durable);
  ch->confirm_select();
  std::vector<std::string> confirmed;
  size_t refused = 0;
  std::string body(4096, 'x');
  for (int i = 0; i < 2000 && refused == 0; ++i) {
    auto m = persistent("q", std::to_string(i) + body);
    auto r = ch->publish(m);
    if (r.outcome == publish_outcome::routed)
      confirmed.push_back(m.body);
    else
      ++refused;
  }
  BOOST_TEST(refused > 0u);
  BOOST_TEST(node.alive());
  BOOST_TEST(node.wait_for_log("No space left on device"));
  // Space returns: publishing works again.
  fs::remove(ballast);
  auto again = persistent("q", "after");
  BOOST_TEST(to_string(ch->publish(again).outcome) == std::string("routed"));
  confirmed.push_back("after");
  // Everything confirmed survives a crash; nothing refused is there.
  node.kill9();
  node_process restarted({"--disk-free-limit", "0"}, mount_point.path() + "/data");
  auto conn2 = connect_to(restarted);
  auto all = drain(*conn2, "q");
  BOOST_REQUIRE(all.size() == confirmed.size());
  for (size_t i = 0; i < all.size(); ++i) BOOST_TEST_REQUIRE(all[i].body == confirmed[i]);
}

// The disk alarm holds publishers back before the disk is full: their publish calls are
// answered once space returns.
BOOST_AUTO_TEST_CASE(publishes_wait_while_the_disk_alarm_lasts) {
  warren::test::tmpfs_mount mount_point("16m");
  node_process node({"--disk-free-limit", "8000000"}, mount_point.path() + "/data");
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("q", durable);
  BOOST_TEST(to_string(ch->publish(persistent("q", "before")).outcome) == std::string("routed"));
  auto ballast = mount_point.path() + "/ballast";
  {
    std::ofstream out(ballast, std::ios::binary);
    std::string chunk(1 << 20, 'b');
    for (int i = 0; i < 10; ++i) out << chunk;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (node.log().find("disk alarm") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_REQUIRE(node.log().find("disk alarm") != std::string::npos);
  auto held = ch->publish_batch({persistent("q", "held")});
  // Not answered while the alarm lasts (this can only pass falsely, never fail falsely).
  BOOST_TEST((held.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout));
  fs::remove(ballast);
  auto results = held.get();
  BOOST_REQUIRE(results.size() == 1u);
  BOOST_TEST(to_string(results[0].outcome) == std::string("routed"));
  auto all = drain(*conn, "q");
  BOOST_REQUIRE(all.size() == 2u);
  BOOST_TEST(all[1].body == "held");
}

BOOST_AUTO_TEST_SUITE_END()
