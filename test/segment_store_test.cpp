// The segment store against real files, in normal operation: round trips of messages and their
// properties, acks and delivered marks, restarts, rolling, reading live records back from a
// sequence number, recovery within a memory limit, indexes, the descriptor cache, and the size
// of a stored record. Damaged files (segment_store_damage_test) and compaction
// (segment_store_compaction_test) have suites of their own.
#include <boost/test/unit_test.hpp>

#include "segment_store_fixture.hpp"

#include <memory>
#include <set>

using namespace warren;
using namespace warren::persistence;
using namespace warren::test::segments;

BOOST_FIXTURE_TEST_SUITE(segments, segment_store_fixture)

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

// Issue 9, item 5: write_marks() puts a delivered mark in the file at once, with no sync after it.
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

// Issue 9, item 6: a thousand queues' stores share a handful of descriptors.
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

// Issue 9, item 9: a record costs its body plus a small fixed header, names and set properties.
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

BOOST_AUTO_TEST_SUITE_END()
