// The segment store against real files: round trips, acks, the delivered bit, torn tails,
// flipped bits, rolling, compaction interleaved with appends and acks.
#define BOOST_TEST_MODULE segment_store
#include <boost/test/unit_test.hpp>

#include "persistence/segment_store.hpp"
#include "subprocess.hpp"

#include <filesystem>
#include <fstream>
#include <set>

using namespace warren;
using namespace warren::persistence;
namespace fs = std::filesystem;

namespace {

message make_message(const std::string& body) {
  message m;
  m.id = next_message_id();
  m.exchange = "ex";
  m.routing_key = "key";
  message_properties p;
  p.persistent = true;
  p.headers = {{"h", field_value::of_int(7)},
               {"nested", field_value::of_table(
                              {{"hops", field_value::of_array({field_value::of_text("a"),
                                                               field_value::of_int(2)})}})}};
  m.set_properties(std::move(p));
  m.body = body;
  return m;
}

struct fixture {
  warren::test::temp_dir tmp;
  std::string dir = tmp.path() + "/queues/1";

  std::vector<recovered_message> reopen(recovery_report& report, segment_store::options opts = {}) {
    segment_store store(dir, "'t'", opts);
    return store.recover(report);
  }

  std::vector<fs::path> segment_files() {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::vector<std::string> bodies(const std::vector<recovered_message>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(r.msg->body);
  return out;
}

using strings = std::vector<std::string>;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(segments, fixture)

BOOST_AUTO_TEST_CASE(synced_messages_come_back_whole_and_in_order) {
  auto original = make_message("one");
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, original);
    store.append(2, make_message("two"));
    store.append(3, make_message("three"));
    BOOST_TEST(store.sync(true));
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"one", "two", "three"}), boost::test_tools::per_element());
  BOOST_TEST((back[0].msg->id == original.id));
  BOOST_TEST(back[0].msg->routing_key == "key");
  BOOST_TEST(back[0].msg->persistent());
  BOOST_TEST(find_field(back[0].msg->properties().headers, "h")->i == 7);
  // Nested tables and arrays come back as they were stored.
  BOOST_TEST(same_table(back[0].msg->properties().headers, original.properties().headers));
  BOOST_TEST(back[2].seq == 3u);
  BOOST_TEST(!back[0].delivered);
}

BOOST_AUTO_TEST_CASE(removed_messages_stay_gone_and_delivered_ones_are_marked) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 4; ++i) store.append(i, make_message(std::to_string(i)));
    store.sync(true);
    store.remove(2);
    store.mark_delivered(3);
    store.sync(true);
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"1", "3", "4"}), boost::test_tools::per_element());
  BOOST_TEST(back[1].delivered);
  BOOST_TEST(!back[2].delivered);
}

BOOST_AUTO_TEST_CASE(a_message_acked_before_its_batch_is_written_is_written_dead) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, make_message("short-lived"));
    store.remove(1);
    store.append(2, make_message("kept"));
    store.sync(true);
  }
  recovery_report report;
  BOOST_TEST(bodies(reopen(report)) == (strings{"kept"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(appends_after_a_restart_continue_the_segment) {
  for (int round = 0; round < 3; ++round) {
    segment_store store(dir, "'t'");
    recovery_report r;
    auto back = store.recover(r);
    BOOST_TEST(back.size() == static_cast<size_t>(round * 2));
    auto next = store.max_seq() + 1;
    store.append(next, make_message("a" + std::to_string(round)));
    store.append(next + 1, make_message("b" + std::to_string(round)));
    if (!back.empty()) store.remove(back.front().seq), store.append(next + 2, *back.front().msg);
    store.sync(true);
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 6u);
  BOOST_TEST(report.corrupt_records == 0u);
}

BOOST_AUTO_TEST_CASE(a_torn_tail_is_truncated_and_the_rest_loads) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 3; ++i) store.append(i, make_message("m" + std::to_string(i)));
    store.sync(true);
  }
  auto file = segment_files().front();
  auto size = fs::file_size(file);
  fs::resize_file(file, size - 5);  // cut into the last record
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"m1", "m2"}), boost::test_tools::per_element());
  BOOST_TEST(report.truncated_bytes > 0u);
  BOOST_TEST(fs::file_size(file) < size - 5);
  // The store keeps working after the cut.
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(store.max_seq() + 1, make_message("m4"));
    store.sync(true);
  }
  recovery_report again;
  BOOST_TEST(bodies(reopen(again)) == (strings{"m1", "m2", "m4"}),
             boost::test_tools::per_element());
  BOOST_TEST(again.truncated_bytes == 0u);
}

BOOST_AUTO_TEST_CASE(a_flipped_bit_in_the_middle_skips_only_that_record) {
  uint64_t second_offset = 0;
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, make_message("first"));
    store.sync(true);
    second_offset = store.bytes_on_disk();
    store.append(2, make_message("second"));
    store.append(3, make_message("third"));
    store.sync(true);
  }
  auto file = segment_files().front();
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(second_offset + 40));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(second_offset + 40));
    f.put(static_cast<char>(c ^ 0x10));
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"first", "third"}), boost::test_tools::per_element());
  BOOST_TEST(report.corrupt_records == 1u);
}

BOOST_AUTO_TEST_CASE(segments_roll_and_emptied_ones_are_deleted) {
  segment_store::options small;
  small.segment_bytes = 4096;
  {
    segment_store store(dir, "'t'", small);
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 100; ++i) store.append(i, make_message(std::string(200, 'x')));
    store.sync(true);
    BOOST_TEST(store.segment_count() > 3u);
    auto before = store.segment_count();
    for (uint64_t i = 1; i <= 50; ++i) store.remove(i);
    store.sync(true);
    BOOST_TEST(store.segment_count() < before);
  }
  recovery_report report;
  auto back = reopen(report, small);
  BOOST_TEST(back.size() == 50u);
  BOOST_TEST(back.front().seq == 51u);
}

BOOST_AUTO_TEST_CASE(compaction_interleaved_with_appends_and_acks_keeps_every_live_message) {
  segment_store::options opts;
  opts.segment_bytes = 64 * 1024;
  opts.compact_min_records = 50;
  std::set<uint64_t> live;
  uint64_t seq = 0;
  size_t compactions = 0;
  {
    segment_store store(dir, "'t'", opts);
    recovery_report r;
    store.recover(r);
    for (int round = 0; round < 40; ++round) {
      for (int i = 0; i < 100; ++i) {
        ++seq;
        store.append(seq, make_message("m" + std::to_string(seq)));
        live.insert(seq);
      }
      // Ack three of every four messages of older rounds, scattered.
      for (auto it = live.begin(); it != live.end();) {
        if (*it + 150 < seq && *it % 4 != 0) {
          store.remove(*it);
          it = live.erase(it);
        } else {
          ++it;
        }
      }
      BOOST_REQUIRE(store.sync(true));
      while (store.wants_compaction()) {
        BOOST_REQUIRE(store.compact_one());
        ++compactions;
      }
      // Acks after a compaction must hit the moved records.
      if (!live.empty() && *live.begin() % 4 == 0 && *live.begin() + 400 < seq) {
        store.remove(*live.begin());
        live.erase(live.begin());
      }
    }
    store.sync(true);
  }
  BOOST_TEST(compactions > 0u);
  recovery_report report;
  auto back = reopen(report, opts);
  std::set<uint64_t> recovered;
  for (const auto& r : back) {
    recovered.insert(r.seq);
    BOOST_TEST_REQUIRE(r.msg->body == "m" + std::to_string(r.seq));
  }
  BOOST_TEST((recovered == live));
  BOOST_TEST(report.corrupt_records == 0u);
}

BOOST_AUTO_TEST_CASE(leftover_tmp_files_are_removed_at_start) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, make_message("x"));
    store.sync(true);
  }
  std::ofstream(dir + "/00000000000000000001.seg.tmp") << "half a compaction";
  recovery_report report;
  BOOST_TEST(reopen(report).size() == 1u);
  BOOST_TEST(!fs::exists(dir + "/00000000000000000001.seg.tmp"));
}

BOOST_AUTO_TEST_CASE(destroy_removes_the_folder) {
  segment_store store(dir, "'t'");
  recovery_report r;
  store.recover(r);
  store.append(1, make_message("x"));
  store.sync(true);
  BOOST_TEST(fs::exists(dir));
  store.destroy();
  BOOST_TEST(!fs::exists(dir));
}

BOOST_AUTO_TEST_SUITE_END()
