// The segment store against real files: round trips, acks, delivered marks, torn tails, damage
// anywhere in a segment or its mark file, stray files, unreadable folders, rolling, compaction
// (also of the active segment) interleaved with appends and acks, the descriptor cache, and
// the size of a stored record.
#include <boost/test/unit_test.hpp>

#include "persistence/segment_format.hpp"
#include "persistence/segment_store.hpp"
#include "subprocess.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
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

  // The folder's files ending in `suffix`, in name order.
  std::vector<fs::path> files(const std::string& suffix = ".seg") {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == suffix) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<fs::path> segment_files() { return files(".seg"); }

  // A store with `n` messages "m1".."mn" synced, then closed.
  void fill(uint64_t n, segment_store::options opts = {}) {
    segment_store store(dir, "'t'", opts);
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= n; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
  }
};

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& file, uint64_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void flip_bit(const fs::path& file, uint64_t offset, uint8_t mask) {
  auto data = read_bytes(file);
  write_bytes(file, offset, std::string(1, static_cast<char>(data.at(offset) ^ mask)));
}

// Offsets of the frames of a segment file, as a reader that knows the format finds them.
std::vector<uint64_t> frame_offsets(const fs::path& file) {
  auto data = read_bytes(file);
  auto scan =
      format::scan_frames(data, format::file_header_size, [](std::string_view) { return true; });
  std::vector<uint64_t> out;
  for (const auto& f : scan.frames) out.push_back(f.offset);
  return out;
}

std::set<uint64_t> seqs(const std::vector<recovered_message>& rs) {
  std::set<uint64_t> out;
  for (const auto& r : rs) out.insert(r.seq);
  return out;
}

std::set<uint64_t> range(uint64_t from, uint64_t to) {
  std::set<uint64_t> out;
  for (auto i = from; i <= to; ++i) out.insert(i);
  return out;
}

std::vector<std::string> bodies(const std::vector<recovered_message>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(r.msg->body);
  return out;
}

using strings = std::vector<std::string>;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(segments, fixture)

BOOST_AUTO_TEST_CASE(properties_set_to_their_defaults_are_stored_as_set) {
  for (uint16_t set : {uint16_t(property_flag::delivery_mode),
                       uint16_t(property_flag::delivery_mode | property_flag::priority |
                                property_flag::content_type | property_flag::headers)}) {
    message m;
    message_properties p;
    p.set_to_default = set;  // transient: delivery mode 1, and the rest at their defaults
    m.set_properties(p);
    uint64_t seq = 0;
    auto back = format::decode_message(format::encode_message(9, m), seq);
    BOOST_CHECK_EQUAL(seq, 9u);
    BOOST_CHECK(!back->persistent());
    BOOST_CHECK_EQUAL(back->properties().set_to_default, set);
  }
}

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
  BOOST_TEST(report.damaged_spans == 0u);
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
  fill(3);
  auto file = segment_files().front();
  auto second = frame_offsets(file).at(1);
  auto before = fs::file_size(file);
  flip_bit(file, second + 40, 0x10);
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"m1", "m3"}), boost::test_tools::per_element());
  BOOST_TEST(report.damaged_spans == 1u);
  BOOST_TEST(fs::file_size(file) == before);  // kept as it is, for whoever looks into it
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
  BOOST_TEST(report.damaged_spans == 0u);
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

// Issue 9, item 1: a stray file must not stop recovery, and nothing may be written over it.
BOOST_AUTO_TEST_CASE(unknown_files_are_left_alone_and_new_records_never_reuse_a_taken_name) {
  fill(50);
  std::ofstream(dir + "/99999999999999999999999.seg") << "not ours";
  std::ofstream(dir + "/notes.txt") << "someone's notes";
  fs::create_directory(dir + "/00000000000000000900.seg");
  auto original = read_bytes(segment_files().front());
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    auto back = store.recover(r);
    BOOST_TEST(back.size() == 50u);
    BOOST_TEST(r.ignored_files == 3u);
    BOOST_TEST(store.max_seq() >= 900u);  // a name seen is a name never taken
    store.append(store.max_seq() + 1, make_message("new"));
    BOOST_REQUIRE(store.sync(true));
  }
  BOOST_TEST(read_bytes(dir + "/00000000000000000001.seg") == original);
  BOOST_TEST(read_bytes(dir + "/99999999999999999999999.seg") == "not ours");
  BOOST_TEST(fs::is_directory(dir + "/00000000000000000900.seg"));
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 51u);
  BOOST_TEST(back.back().msg->body == "new");
}

BOOST_AUTO_TEST_CASE(a_folder_that_cannot_be_read_is_reported_unavailable_and_untouched) {
  fs::create_directories(fs::path(dir).parent_path());
  std::ofstream(dir) << "a file where the queue folder should be";
  segment_store store(dir, "'t'");
  recovery_report r;
  BOOST_CHECK_THROW(store.recover(r), storage_unavailable);
  BOOST_TEST(read_bytes(dir) == "a file where the queue folder should be");
}

// Out of descriptors (EMFILE) while loading: the store must say so, not start empty.
BOOST_AUTO_TEST_CASE(running_out_of_descriptors_while_loading_is_unavailable_not_empty) {
  fill(10);
  pid_t pid = fork();
  if (pid == 0) {
    rlimit none{3, 3};  // stdin, stdout, stderr: not one more descriptor
    setrlimit(RLIMIT_NOFILE, &none);
    segment_store store(dir, "'t'");
    recovery_report r;
    try {
      store.recover(r);
    } catch (const storage_unavailable&) {
      _exit(0);
    }
    _exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  recovery_report report;
  BOOST_TEST(reopen(report).size() == 10u);
}

// Item 2: a damaged length in a closed segment costs that record, not the rest of the file.
BOOST_AUTO_TEST_CASE(a_damaged_length_in_a_closed_segment_costs_only_that_record) {
  fill(1000);
  {
    segment_store store(dir, "'t'");  // a restart: the first segment is closed now
    recovery_report r;
    store.recover(r);
    store.append(1001, make_message("m1001"));
    BOOST_REQUIRE(store.sync(true));
  }
  auto file = segment_files().front();
  auto frames = frame_offsets(file);
  auto size = fs::file_size(file);
  flip_bit(file, frames.at(500) + 5, 0x40);  // the length field of the 501st record
  recovery_report report;
  auto back = reopen(report);
  auto want = range(1, 1001);
  want.erase(501);
  BOOST_TEST((seqs(back) == want));
  BOOST_TEST(report.truncated_bytes == 0u);
  BOOST_TEST(report.damaged_spans == 1u);
  BOOST_TEST(fs::file_size(file) == size);
}

BOOST_AUTO_TEST_CASE(random_bytes_over_the_start_of_a_segment_cost_only_what_they_cover) {
  fill(1000);
  auto file = segment_files().front();
  auto frames = frame_offsets(file);
  std::string noise(64, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>(i * 37 + 11);
  write_bytes(file, 0, noise);
  recovery_report report;
  auto back = reopen(report);
  // Every record that starts at or after byte 64 is whole and comes back.
  std::set<uint64_t> want;
  for (size_t n = 0; n < frames.size(); ++n)
    if (frames[n] >= 64) want.insert(n + 1);
  BOOST_TEST(want.size() >= 995u);
  BOOST_TEST((seqs(back) == want));
}

// Item 3: marks are checksummed; a damaged one brings messages back, marked, never drops them.
BOOST_AUTO_TEST_CASE(a_damaged_mark_brings_its_messages_back_marked_redelivered) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 20; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
    for (uint64_t i = 1; i <= 10; ++i) store.remove(i);
    BOOST_REQUIRE(store.sync(true));
  }
  auto marks = files(".ack").front();
  auto data = read_bytes(marks);
  BOOST_REQUIRE(data.size() > format::file_header_size);
  write_bytes(marks, format::file_header_size + 8,
              std::string(data.size() - format::file_header_size - 8, '\0'));
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 20u);  // at least once: the acked ten are back
  BOOST_TEST(report.unsure_marks == 1u);
  for (const auto& r : back) BOOST_TEST(r.delivered);
}

// A damaged last frame of a mark file is cut as a torn tail; the redelivered flags it cost are
// written down at once, so the next restart (which finds a clean, shorter file) still has them.
BOOST_AUTO_TEST_CASE(redelivered_flags_from_damaged_marks_survive_the_next_restart) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 5; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
    for (uint64_t i = 1; i <= 5; ++i) store.mark_delivered(i);
    store.write_marks();
  }
  auto marks = files(".ack").front();
  auto data = read_bytes(marks);
  BOOST_REQUIRE(data.size() > format::file_header_size + 4);
  write_bytes(marks, data.size() - 2, "\xff\xff");  // the last frame no longer checks out
  recovery_report first;
  for (const auto& r : reopen(first)) BOOST_TEST(r.delivered);
  recovery_report second;
  auto back = reopen(second);
  BOOST_TEST(back.size() == 5u);
  for (const auto& r : back) BOOST_TEST(r.delivered, "seq " << r.seq << " lost its mark");
}

BOOST_AUTO_TEST_CASE(a_lost_mark_file_brings_every_message_back_marked_redelivered) {
  fill(5);
  fs::remove(files(".ack").front());
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 5u);
  for (const auto& r : back) BOOST_TEST(r.delivered);
  // Marks work again after it: an ack is remembered.
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.remove(1);
    BOOST_REQUIRE(store.sync(true));
  }
  recovery_report again;
  BOOST_TEST(reopen(again).size() == 4u);
}

// Item 5: write_marks() puts a delivered mark in the file at once, with no sync after it.
BOOST_AUTO_TEST_CASE(a_delivered_mark_is_in_the_file_before_the_delivery_leaves) {
  fill(3);
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.mark_delivered(2);
    store.write_marks();
    // No sync: the store is dropped as a kill -9 would drop it.
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_REQUIRE(back.size() == 3u);
  BOOST_TEST(!back[0].delivered);
  BOOST_TEST(back[1].delivered);
  BOOST_TEST(!back[2].delivered);
}

// Item 6: a thousand queues' stores share a handful of descriptors.
BOOST_AUTO_TEST_CASE(many_stores_share_a_bounded_descriptor_cache) {
  auto cache = std::make_shared<file_cache>(8);
  std::vector<std::unique_ptr<segment_store>> stores;
  for (int q = 0; q < 1000; ++q) {
    stores.push_back(std::make_unique<segment_store>(tmp.path() + "/queues/" + std::to_string(q),
                                                     "'q'", segment_store::options{}, cache));
    recovery_report r;
    stores.back()->recover(r);
    stores.back()->append(1, make_message("a"));
    BOOST_REQUIRE(stores.back()->sync(true));
  }
  BOOST_TEST(cache->open_count() <= 8u);
  for (auto& store : stores) {  // evicted descriptors are reopened on demand
    store->append(2, make_message("b"));
    store->remove(1);
    BOOST_REQUIRE(store->sync(true));
  }
  BOOST_TEST(cache->open_count() <= 8u);
  stores.clear();
  segment_store store(tmp.path() + "/queues/999", "'q'");
  recovery_report r;
  BOOST_TEST(bodies(store.recover(r)) == (strings{"b"}), boost::test_tools::per_element());
}

// Item 7: compaction while marks are pending must leave the next durable batch confirmable.
BOOST_AUTO_TEST_CASE(a_batch_after_a_compaction_with_pending_marks_is_confirmed) {
  segment_store::options opts;
  opts.segment_bytes = 16 * 1024;
  opts.compact_min_records = 20;
  segment_store store(dir, "'t'", opts);
  recovery_report r;
  store.recover(r);
  uint64_t seq = 0;
  for (int i = 0; i < 600; ++i) store.append(++seq, make_message("m"));
  BOOST_REQUIRE(store.sync(true));
  for (uint64_t s = 1; s <= 400; ++s)
    if (s % 5 != 0) store.remove(s);
  BOOST_REQUIRE(store.sync(false));                               // marks written, not synced
  for (uint64_t s = 401; s <= 600; ++s) store.mark_delivered(s);  // pending
  BOOST_REQUIRE(store.wants_compaction());
  while (store.wants_compaction()) BOOST_REQUIRE(store.compact_one());
  for (int i = 0; i < 50; ++i) store.append(++seq, make_message("after"));
  BOOST_TEST(store.sync(true));
  BOOST_TEST(store.failed().empty());
}

// Item 8: the segment being appended to is compacted too, once it is mostly acked.
BOOST_AUTO_TEST_CASE(a_mostly_acked_active_segment_shrinks) {
  segment_store store(dir, "'t'");
  recovery_report r;
  store.recover(r);
  for (uint64_t i = 1; i <= 20000; ++i) store.append(i, make_message("hello, world!"));
  BOOST_REQUIRE(store.sync(true));
  auto full = store.bytes_on_disk();
  for (uint64_t i = 1; i <= 16000; ++i) store.remove(i);
  BOOST_REQUIRE(store.sync(true));
  while (store.wants_compaction()) BOOST_REQUIRE(store.compact_one());
  BOOST_TEST_MESSAGE("20,000 records: " << full << " bytes; 4,000 left after compaction: "
                                        << store.bytes_on_disk() << " bytes");
  BOOST_TEST(store.bytes_on_disk() * 4 < full);
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST((seqs(back) == range(16001, 20000)));
}

// Item 9: a record costs its body plus a small fixed header, names and set properties.
BOOST_AUTO_TEST_CASE(stored_records_are_compact) {
  for (size_t body : {16, 64, 1024}) {
    std::string sub = tmp.path() + "/size" + std::to_string(body);
    segment_store store(sub, "'t'");
    recovery_report r;
    store.recover(r);
    message m;
    m.id = next_message_id();
    m.routing_key = "orders";  // the default exchange, as most publishes use
    message_properties p;
    p.persistent = true;
    m.set_properties(p);
    m.body = std::string(body, 'x');
    const int n = 1000;
    auto before = store.bytes_on_disk();
    for (int i = 1; i <= n; ++i) store.append(static_cast<uint64_t>(i), m);
    BOOST_REQUIRE(store.sync(true));
    auto per_record = static_cast<double>(store.bytes_on_disk() - before) / n;
    BOOST_TEST_MESSAGE("bytes per stored record, " << body << " B body: " << per_record);
    // 8 frame + 8 seq + 16 id + 1 flags + 1+0 exchange + 1+6 key + 4 properties length.
    BOOST_TEST(per_record - static_cast<double>(body) <= 46.0);
  }
}

BOOST_AUTO_TEST_CASE(set_properties_are_stored_and_come_back) {
  auto original = make_message("with headers");
  auto p = original.properties();
  p.content_type = "text/plain";
  p.priority = 3;
  p.timestamp = 1700000000;
  original.set_properties(p);
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, original);
    BOOST_REQUIRE(store.sync(true));
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_REQUIRE(back.size() == 1u);
  const auto& q = back[0].msg->properties();
  BOOST_TEST(q.content_type == "text/plain");
  BOOST_TEST(q.priority == 3);
  BOOST_TEST(q.timestamp == 1700000000);
  BOOST_TEST(same_table(q.headers, original.properties().headers));
}

BOOST_AUTO_TEST_CASE(a_segment_of_another_version_or_queue_is_reported_not_trusted) {
  fill(20);
  auto file = segment_files().front();
  write_bytes(file, 8, std::string(8, '\x7f'));  // header names another first sequence
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 20u);  // the records themselves still check out
  BOOST_TEST(report.damaged_spans == 1u);
}

BOOST_AUTO_TEST_CASE(live_records_are_read_back_in_order_from_a_sequence_number) {
  segment_store::options small;
  small.segment_bytes = 1024;  // many segments
  segment_store store(dir, "'t'", small);
  recovery_report r;
  store.recover(r);
  for (uint64_t i = 1; i <= 60; ++i)
    store.append(i, make_message("m" + std::to_string(i)), 1000 + i);
  BOOST_REQUIRE(store.sync(true));
  BOOST_REQUIRE(segment_files().size() > 3);
  store.remove(12);
  store.mark_delivered(13);
  store.sync(true);
  auto first = store.read_live(10, 5, UINT64_MAX);
  BOOST_TEST(bodies(first.messages) == (strings{"m10", "m11", "m13", "m14", "m15"}),
             boost::test_tools::per_element());
  BOOST_TEST(first.messages[2].delivered);
  BOOST_TEST(!first.messages[0].delivered);
  BOOST_TEST(first.messages[0].enqueued_at_ms == 1010);
  BOOST_TEST(first.next_seq == 16u);
  BOOST_TEST(first.lost == 0u);
  // Reading on from where it stopped reaches the end, across segments, and then nothing.
  auto rest = store.read_live(first.next_seq, 1000, UINT64_MAX);
  BOOST_TEST(seqs(rest.messages) == range(16, 60));
  BOOST_TEST(store.read_live(rest.next_seq, 10, UINT64_MAX).messages.empty());
  // A byte budget stops a read early (after the record that reached it).
  BOOST_TEST(store.read_live(1, 1000, 1).messages.size() == 1u);
}

BOOST_AUTO_TEST_CASE(records_appended_but_not_synced_are_read_back_too) {
  segment_store store(dir, "'t'");
  recovery_report r;
  store.recover(r);
  store.append(1, make_message("buffered"));
  auto back = store.read_live(1, 10, UINT64_MAX);
  BOOST_TEST(bodies(back.messages) == strings{"buffered"}, boost::test_tools::per_element());
  BOOST_TEST(store.sync(true));
}

BOOST_AUTO_TEST_CASE(a_record_damaged_on_disk_is_lost_alone_when_read_back_and_its_file_kept) {
  segment_store store(dir, "'t'");
  recovery_report r;
  store.recover(r);
  for (uint64_t i = 1; i <= 5; ++i) store.append(i, make_message("m" + std::to_string(i)));
  BOOST_REQUIRE(store.sync(true));
  auto seg = segment_files().at(0);
  auto offsets = frame_offsets(seg);
  flip_bit(seg, offsets[2] + format::frame_header_size + 30, 0x10);
  auto back = store.read_live(1, 10, UINT64_MAX);
  BOOST_TEST(bodies(back.messages) == (strings{"m1", "m2", "m4", "m5"}),
             boost::test_tools::per_element());
  BOOST_TEST(back.lost == 1u);
  BOOST_TEST(!store.holds(3));
  // Every other record is still live; the damaged file is never deleted under them.
  for (uint64_t i : {1, 2, 4, 5}) store.remove(i);
  store.sync(true);
  BOOST_TEST(fs::exists(seg));
}

BOOST_AUTO_TEST_CASE(recovery_within_a_memory_limit_leaves_the_rest_on_disk) {
  fill(100);
  segment_store store(dir, "'t'");
  recovery_report report;
  // Room for about ten messages of this size with 100 bytes of overhead each.
  auto back = store.recover(report, 10 * (100 + 3), 100);
  BOOST_TEST(back.in_memory.size() >= 9u);
  BOOST_TEST(back.in_memory.size() <= 10u);
  auto kept = back.in_memory.size();
  BOOST_TEST(back.paged_count == 100 - kept);
  BOOST_TEST(back.paged_from == kept + 1);
  uint64_t body_bytes = 0;
  for (uint64_t i = kept + 1; i <= 100; ++i) body_bytes += ("m" + std::to_string(i)).size();
  BOOST_TEST(back.paged_body_bytes == body_bytes);
  auto rest = store.read_live(back.paged_from, 1000, UINT64_MAX);
  BOOST_TEST(seqs(rest.messages) == range(kept + 1, 100));
}

BOOST_AUTO_TEST_CASE(transient_records_are_discarded_at_recovery) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    auto transient = make_message("transient");
    auto props = transient.properties();
    props.persistent = false;
    transient.set_properties(props);
    store.append(1, make_message("kept"));
    store.append(2, transient);
    store.append(3, make_message("kept too"));
    BOOST_REQUIRE(store.sync(true));
    // Read back before a restart, the transient one is there like the others.
    BOOST_TEST(store.read_live(1, 10, UINT64_MAX).messages.size() == 3u);
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(bodies(back) == (strings{"kept", "kept too"}), boost::test_tools::per_element());
  BOOST_TEST(report.transient == 1u);
}

BOOST_AUTO_TEST_CASE(removing_from_a_sequence_number_drops_whole_segments_and_marks_the_rest) {
  segment_store::options small;
  small.segment_bytes = 1024;
  {
    segment_store store(dir, "'t'", small);
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 60; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
    auto before = segment_files().size();
    BOOST_TEST(store.remove_from(20) == 41u);
    store.sync(true);
    BOOST_TEST(segment_files().size() < before);
    BOOST_TEST(store.holds(19));
    BOOST_TEST(!store.holds(20));
    BOOST_TEST(store.read_live(20, 100, UINT64_MAX).messages.empty());
  }
  recovery_report report;
  BOOST_TEST(seqs(reopen(report, small)) == range(1, 19));
}

BOOST_AUTO_TEST_CASE(the_enqueue_time_survives_a_restart_and_old_records_have_none) {
  {
    segment_store store(dir, "'t'");
    recovery_report r;
    store.recover(r);
    store.append(1, make_message("timed"), 1'700'000'000'123);
    store.append(2, make_message("untimed"));
    BOOST_REQUIRE(store.sync(true));
  }
  recovery_report report;
  auto back = reopen(report);
  BOOST_REQUIRE(back.size() == 2u);
  BOOST_TEST(back[0].enqueued_at_ms == 1'700'000'000'123);
  BOOST_TEST(back[0].msg->body == "timed");
  BOOST_TEST(back[1].enqueued_at_ms == 0);
}

BOOST_AUTO_TEST_CASE(the_index_costs_sixteen_bytes_a_record) {
  segment_store store(dir, "'t'");
  recovery_report r;
  store.recover(r);
  for (uint64_t i = 1; i <= 10000; ++i) store.append(i, make_message("x"));
  BOOST_REQUIRE(store.sync(true));
  BOOST_TEST(store.index_bytes() == 10000u * 16);
  for (uint64_t i = 1; i <= 10000; ++i) store.remove(i);
  store.sync(true);  // the emptied segment is dropped, and its slots with it
  BOOST_TEST(store.index_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(closed_segments_get_an_index_and_a_restart_leaves_paged_ones_unread) {
  segment_store::options small;
  small.segment_bytes = 1024;
  fill(60, small);
  auto segs = segment_files();
  BOOST_REQUIRE(segs.size() > 4);
  // Every segment but the newest was closed and synced: each has its index.
  BOOST_TEST(files(".idx").size() == segs.size() - 1);
  // Damage in a segment past the memory limit: with its index it is not read at start, so the
  // damage is found (and reported) only when that record is read back.
  auto victim = segs[segs.size() - 2];
  auto offsets = frame_offsets(victim);
  flip_bit(victim, offsets[0] + format::frame_header_size + 30, 0x04);
  segment_store store(dir, "'t'", small);
  recovery_report report;
  auto back = store.recover(report, 1, 0);  // nothing fits: everything stays on disk
  BOOST_TEST(back.in_memory.empty());
  BOOST_TEST(back.paged_count == 60u);
  BOOST_TEST(back.paged_from == 1u);
  BOOST_TEST(report.damaged_spans == 0u);
  auto rest = store.read_live(back.paged_from, 1000, UINT64_MAX);
  BOOST_TEST(rest.messages.size() == 59u);
  BOOST_TEST(rest.lost == 1u);
}

BOOST_AUTO_TEST_CASE(an_index_that_does_not_check_out_is_ignored_and_the_segment_read) {
  segment_store::options small;
  small.segment_bytes = 1024;
  fill(60, small);
  auto indexes = files(".idx");
  BOOST_REQUIRE(indexes.size() > 2);
  write_bytes(indexes[1], 20, "garbage");
  auto text = read_bytes(indexes[2]);
  std::ofstream(indexes[2], std::ios::binary | std::ios::trunc) << text.substr(0, text.size() / 2);
  {
    segment_store store(dir, "'t'", small);
    recovery_report report;
    auto back = store.recover(report, 1, 0);
    BOOST_TEST(back.paged_count == 60u);
    BOOST_TEST(seqs(store.read_live(1, 1000, UINT64_MAX).messages) == range(1, 60));
  }
  // The damaged indexes were written anew from the segments.
  BOOST_TEST(read_bytes(indexes[2]).size() == text.size());
  recovery_report report;
  BOOST_TEST(seqs(reopen(report, small)) == range(1, 60));
}

BOOST_AUTO_TEST_CASE(acks_made_after_an_index_was_written_still_count_at_restart) {
  segment_store::options small;
  small.segment_bytes = 1024;
  {
    segment_store store(dir, "'t'", small);
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= 60; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
    for (uint64_t i = 2; i <= 40; i += 2) store.remove(i);
    store.mark_delivered(41);
    store.sync(true);
  }
  segment_store store(dir, "'t'", small);
  recovery_report report;
  auto back = store.recover(report, 1, 0);
  auto all = store.read_live(back.paged_from, 1000, UINT64_MAX);
  std::set<uint64_t> expected = range(1, 60);
  for (uint64_t i = 2; i <= 40; i += 2) expected.erase(i);
  BOOST_TEST(seqs(all.messages) == expected);
  BOOST_TEST(back.paged_count == expected.size());
  for (const auto& m : all.messages) BOOST_TEST(m.delivered == (m.seq == 41));
}

BOOST_AUTO_TEST_CASE(reading_in_chunks_past_a_lost_record_skips_nothing_else) {
  segment_store::options small;
  small.segment_bytes = 1024;
  fill(60, small);
  auto segs = segment_files();
  BOOST_REQUIRE(segs.size() > 4);
  auto offsets = frame_offsets(segs[2]);
  flip_bit(segs[2], offsets[1] + format::frame_header_size + 30, 0x01);
  // Every chunk size, so that some chunk ends inside the damaged segment: the records after
  // the lost one must still come in the next chunk.
  for (size_t chunk = 1; chunk <= 12; ++chunk) {
    segment_store store(dir, "'t'", small);
    recovery_report r;
    auto back = store.recover(r, 1, 0);
    std::set<uint64_t> got;
    size_t lost = 0;
    for (uint64_t from = back.paged_from;;) {
      auto part = store.read_live(from, chunk, UINT64_MAX);
      for (const auto& m : part.messages) got.insert(m.seq);
      lost += part.lost;
      if (part.messages.empty() && part.lost == 0) break;
      from = part.next_seq;
    }
    BOOST_TEST(lost == 1u);
    BOOST_TEST(got.size() == 59u, "chunks of " << chunk);
  }
}

BOOST_AUTO_TEST_SUITE_END()
