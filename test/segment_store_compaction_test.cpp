// The segment store's compaction against real files: interleaved with appends and acks, with
// delivered marks pending, of the segment still being appended to, and what a compaction cut
// short leaves behind. Its own suite because compaction moves live records under the other
// operations, and each case checks that nothing live is lost or left unconfirmed by it.
#include <boost/test/unit_test.hpp>

#include "segment_store_fixture.hpp"

#include <filesystem>
#include <fstream>
#include <set>

using namespace warren;
using namespace warren::persistence;
using namespace warren::test::segments;

BOOST_FIXTURE_TEST_SUITE(segments, segment_store_fixture)

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

// Issue 9, item 7: compaction while marks are pending must leave the next durable batch
// confirmable.
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

// Issue 9, item 8: the segment being appended to is compacted too, once it is mostly acked.
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

BOOST_AUTO_TEST_SUITE_END()
