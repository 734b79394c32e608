// The segment store against damaged files: torn tails, flipped bits and random bytes in a
// segment, damaged or lost mark files and indexes, a header of another queue, stray files, an
// unreadable folder, and no descriptors left while loading. Its own suite because it states
// one rule apart from normal operation: damage costs what it covers and is reported, and a
// store that cannot read its folder says so instead of starting empty.
#include <boost/test/unit_test.hpp>

#include "segment_store_fixture.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace warren;
using namespace warren::persistence;
using namespace warren::test::segments;

BOOST_FIXTURE_TEST_SUITE(segments, segment_store_fixture)

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

// Issue 9, item 2: a damaged length in a closed segment costs that record, not the rest of the
// file.
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

// Issue 9, item 3: marks are checksummed; a damaged one brings messages back, marked, never drops
// them.
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

BOOST_AUTO_TEST_CASE(a_segment_of_another_version_or_queue_is_reported_not_trusted) {
  fill(20);
  auto file = segment_files().front();
  write_bytes(file, 8, std::string(8, '\x7f'));  // header names another first sequence
  recovery_report report;
  auto back = reopen(report);
  BOOST_TEST(back.size() == 20u);  // the records themselves still check out
  BOOST_TEST(report.damaged_spans == 1u);
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
