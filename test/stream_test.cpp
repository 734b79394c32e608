// Stream queues (x-queue-type=stream) against a real node over loopback: offsets from 0 that
// survive restarts and kill -9, every offset spec, retention by size and age removing whole
// segments only, consumer groups with durable committed offsets, two consumers sharing a group,
// safe delete, and clear errors for bad specs and arguments. (AMQP's side: amqp_features_test,
// scenario streams_over_amqp.)
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

using namespace warren::client;
using namespace warren::test;

namespace {

constexpr auto patience = std::chrono::seconds(30);  // a guard against hanging, not a speed test

queue_options stream_options(field_table extra = {}) {
  queue_options o = durable;
  o.arguments.push_back({"x-queue-type", field_value::of_text("stream")});
  for (auto& f : extra) o.arguments.push_back(std::move(f));
  return o;
}

std::string body_of(int i, size_t size = 16) {
  auto head = "e" + std::to_string(i);
  return head + std::string(size > head.size() ? size - head.size() : 0, '.');
}

// Every other message is transient: a stream keeps them all the same.
void publish_range(channel& ch, const std::string& queue, int first, int n, size_t size = 16) {
  std::vector<outbound_message> batch;
  for (int i = first; i < first + n; ++i) {
    outbound_message m{"", queue, body_of(i, size), {}, false};
    m.properties.persistent = i % 2 == 0;
    batch.push_back(std::move(m));
  }
  for (const auto& r : ch.publish_batch(std::move(batch)).get())
    BOOST_REQUIRE(r.outcome == publish_outcome::routed);
}

// A stream consumer that acks what it is given, up to a limit (the rest stays unacked).
struct reader {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<delivery> got;
  size_t ack_limit = SIZE_MAX;

  channel::message_handler handler(channel& ch) {
    return [this, &ch](const delivery& d) {
      std::lock_guard<std::mutex> guard(mutex);
      got.push_back(d);
      if (got.size() <= ack_limit) ch.ack(d.delivery_tag);
      changed.notify_all();
    };
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, patience, [&] { return got.size() >= n; });
  }
  std::vector<int64_t> offsets() {
    std::lock_guard<std::mutex> guard(mutex);
    std::vector<int64_t> out;
    for (const auto& d : got) out.push_back(d.stream_offset);
    return out;
  }
};

// Reads `n` messages of `queue` from `offset` (in `group`), acking each, and cancels.
std::vector<delivery> read_from(connection& conn, const std::string& queue, stream_offset offset,
                                size_t n, const std::string& group = {}) {
  reader r;  // outlives the channel whose callbacks use it
  auto ch = conn.open_channel();
  auto tag = ch->consume_stream(queue, offset, group, 100, r.handler(*ch));
  BOOST_REQUIRE_MESSAGE(r.wait_for(n), "only " << r.got.size() << " of " << n << " arrived");
  ch->cancel(tag);
  ch->close();  // no callback runs past this: `r` may go
  return r.got;
}

std::vector<int64_t> offsets_of(const std::vector<delivery>& ds) {
  std::vector<int64_t> out;
  for (const auto& d : ds) out.push_back(d.stream_offset);
  return out;
}

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (auto i = first; i <= last; ++i) out.push_back(i);
  return out;
}

queue_row row_of(connection& conn, const std::string& queue) {
  for (const auto& q : conn.list_queues())
    if (q.name == queue) return q;
  BOOST_FAIL("no queue " << queue);
  return {};
}

group_row group_of(channel& ch, const std::string& queue, const std::string& group) {
  for (const auto& g : ch.list_groups(queue))
    if (g.group == group) return g;
  BOOST_FAIL("no group " << group);
  return {};
}

// The error a call fails with: its code, and text that must name what was wrong.
template <class Call>
std::string failure_of(Call&& call, const std::string& code) {
  try {
    call();
  } catch (const error& e) {
    BOOST_TEST(e.code() == code, "code " << e.code() << ": " << e.text());
    return e.text();
  }
  BOOST_FAIL("the call did not fail");
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(offsets)

BOOST_AUTO_TEST_CASE(offsets_count_from_zero_and_consuming_removes_nothing) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s", stream_options());
  publish_range(*ch, "s", 0, 10);
  auto all = read_from(*conn, "s", {stream_offset::first, 0}, 10);
  BOOST_TEST(offsets_of(all) == range(0, 9), boost::test_tools::per_element());
  for (int i = 0; i < 10; ++i) BOOST_TEST(all[static_cast<size_t>(i)].body == body_of(i));
  auto again = read_from(*conn, "s", {stream_offset::first, 0}, 10);
  BOOST_TEST(offsets_of(again) == range(0, 9), boost::test_tools::per_element());
  auto row = row_of(*conn, "s");
  BOOST_TEST(row.type == "stream");
  BOOST_TEST(row.messages_ready == 10u);
  BOOST_TEST(row.first_offset == 0);
  BOOST_TEST(row.last_offset == 9);
  auto read = ch->read_offset("s", 7);
  BOOST_REQUIRE(read.has_value());
  BOOST_TEST(read->body == body_of(7));
  BOOST_TEST(read->stream_offset == 7);
  BOOST_TEST(!ch->read_offset("s", 10).has_value());
  auto found = ch->lookup(all[3].id);
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(found->message.stream_offset == 3);
}

BOOST_AUTO_TEST_CASE(every_offset_spec_starts_where_it_says) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  // Segments of 4 KiB hold three 1 KiB messages: "last" has a segment start to find.
  ch->queue_declare(
      "s", stream_options({{"x-stream-max-segment-size-bytes", field_value::of_int(4096)}}));
  publish_range(*ch, "s", 0, 10, 1024);
  BOOST_TEST(offsets_of(read_from(*conn, "s", stream_offset::at(6), 4)) == range(6, 9),
             boost::test_tools::per_element());
  auto last = offsets_of(read_from(*conn, "s", {stream_offset::last, 0}, 1));
  BOOST_TEST(last.front() > 0);  // the newest segment's start, not the stream's
  BOOST_TEST(last.front() <= 9);
  BOOST_TEST(row_of(*conn, "s").segments > 1u);
  // A time between two batches: the first message of the second batch.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto between = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  publish_range(*ch, "s", 10, 5, 1024);
  auto since = offsets_of(read_from(*conn, "s", stream_offset::since(between), 5));
  BOOST_TEST(since == range(10, 14), boost::test_tools::per_element());
  // next: only what comes after the consumer attached.
  reader r;  // outlives the channel whose callbacks use it
  auto next_ch = conn->open_channel();
  next_ch->consume_stream("s", {stream_offset::next, 0}, {}, 10, r.handler(*next_ch));
  publish_range(*ch, "s", 15, 2, 1024);
  BOOST_REQUIRE(r.wait_for(2));
  BOOST_TEST(r.offsets() == range(15, 16), boost::test_tools::per_element());
  // An offset ahead of the end waits for it.
  reader ahead;  // outlives the channel whose callbacks use it
  auto ahead_ch = conn->open_channel();
  ahead_ch->consume_stream("s", stream_offset::at(18), {}, 10, ahead.handler(*ahead_ch));
  publish_range(*ch, "s", 17, 3, 1024);
  BOOST_REQUIRE(ahead.wait_for(2));
  BOOST_TEST(ahead.offsets() == range(18, 19), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(offsets_survive_a_kill_9_and_go_on_from_where_they_were) {
  temp_dir dir;
  {
    node_process node({}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare(
        "s", stream_options({{"x-stream-max-segment-size-bytes", field_value::of_int(65536)}}));
    publish_range(*ch, "s", 0, 1000, 200);
    node.kill9();
  }
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto all = read_from(*conn, "s", {stream_offset::first, 0}, 1000);
  BOOST_REQUIRE(all.size() == 1000u);
  for (size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST(all[i].stream_offset == static_cast<int64_t>(i));
    BOOST_TEST(all[i].body == body_of(static_cast<int>(i), 200));
  }
  auto ch = conn->open_channel();
  publish_range(*ch, "s", 1000, 1, 200);
  auto after = read_from(*conn, "s", stream_offset::at(1000), 1);
  BOOST_TEST(after[0].stream_offset == 1000);
  BOOST_TEST(after[0].body == body_of(1000, 200));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(retention)

BOOST_AUTO_TEST_CASE(retention_by_size_removes_whole_segments_from_the_head) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s",
                    stream_options({{"x-stream-max-segment-size-bytes", field_value::of_int(65536)},
                                    {"x-max-length-bytes", field_value::of_int(200000)}}));
  publish_range(*ch, "s", 0, 1000, 1024);  // about 1 MB in 64 KiB segments
  auto row = row_of(*conn, "s");
  BOOST_TEST(row.first_offset > 0);
  BOOST_TEST(row.last_offset == 999);
  BOOST_TEST(row.bytes_on_disk <= 200000u + 65536u);
  // What is left starts at a segment's first message and runs whole to the end.
  auto rest = read_from(*conn, "s", {stream_offset::first, 0}, 1000 - size_t(row.first_offset));
  BOOST_TEST(offsets_of(rest) == range(row.first_offset, 999), boost::test_tools::per_element());
  // A consumer asking for a removed offset starts at the head.
  auto old = read_from(*conn, "s", stream_offset::at(0), 1);
  BOOST_TEST(old[0].stream_offset == row.first_offset);
}

BOOST_AUTO_TEST_CASE(retention_by_age_removes_segments_whose_messages_are_all_older) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s",
                    stream_options({{"x-stream-max-segment-size-bytes", field_value::of_int(8192)},
                                    {"x-max-age", field_value::of_text("3s")}}));
  // 3 s, not 1: publishing the batch may take a second on a busy machine (parallel tests, ASan).
  publish_range(*ch, "s", 0, 40, 1024);  // five segments or so
  BOOST_TEST(row_of(*conn, "s").first_offset == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  publish_range(*ch, "s", 40, 1, 1024);
  // Retention runs once a second: wait (bounded) for it to have run.
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (row_of(*conn, "s").first_offset < 40 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto row = row_of(*conn, "s");
  // Every segment of the old batch is older than 3 s; the newest segment always stays,
  // and the new message went to it.
  BOOST_TEST(row.first_offset > 0);
  BOOST_TEST(row.last_offset == 40);
  auto rest = read_from(*conn, "s", {stream_offset::first, 0}, size_t(41 - row.first_offset));
  BOOST_TEST(offsets_of(rest) == range(row.first_offset, 40), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(groups)

BOOST_AUTO_TEST_CASE(a_group_resumes_after_its_committed_offset_across_restarts) {
  temp_dir dir;
  {
    node_process node({}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare("s", stream_options());
    publish_range(*ch, "s", 0, 100);
    reader r;  // outlives the channel whose callbacks use it
    auto reading = conn->open_channel();
    r.ack_limit = 50;  // the other fifty it was sent go back to the group when it leaves
    auto tag = reading->consume_stream("s", {stream_offset::first, 0}, "billing", 100,
                                       r.handler(*reading));
    BOOST_REQUIRE(r.wait_for(100));
    BOOST_TEST(r.offsets() == range(0, 99), boost::test_tools::per_element());
    reading->cancel(tag);
    auto g = group_of(*ch, "s", "billing");  // its last consumer left: it committed
    BOOST_TEST(g.committed_offset == 49);
    ch->commit_offset("s", "audit", 10);
    BOOST_TEST(node.stop() == 0);
  }
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  auto billing = group_of(*ch, "s", "billing");
  BOOST_TEST(billing.committed_offset == 49);
  BOOST_TEST(billing.lag == 50u);
  auto resumed = read_from(*conn, "s", {}, 1, "billing");
  BOOST_TEST(resumed[0].stream_offset == 50);
  BOOST_TEST(group_of(*ch, "s", "audit").committed_offset == 10);
  BOOST_TEST(read_from(*conn, "s", {}, 1, "audit")[0].stream_offset == 11);
}

BOOST_AUTO_TEST_CASE(acks_commit_by_themselves_and_survive_a_kill_9) {
  temp_dir dir;
  {
    node_process node({"--stream-commit-acks", "100"}, dir.path());
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare("s", stream_options());
    publish_range(*ch, "s", 0, 500);
    reader r;  // outlives the channel whose callbacks use it
    auto reading = conn->open_channel();
    r.ack_limit = 250;  // the rest stays unacked when the node dies
    reading->consume_stream("s", {stream_offset::first, 0}, "g", 400, r.handler(*reading));
    BOOST_REQUIRE(r.wait_for(400));
    // Committed after each hundred acks: wait (bounded) until the 200th shows.
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (group_of(*ch, "s", "g").committed_offset < 199 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    node.kill9();
  }
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  auto committed = group_of(*ch, "s", "g").committed_offset;
  BOOST_TEST(committed >= 199);
  BOOST_TEST(committed <= 249);  // never past what was acked
  BOOST_TEST(read_from(*conn, "s", {}, 1, "g")[0].stream_offset == committed + 1);
}

BOOST_AUTO_TEST_CASE(two_consumers_in_a_group_share_the_stream) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s", stream_options());
  reader a, b;  // outlive the channels whose callbacks use them
  auto ch1 = conn->open_channel();
  auto ch2 = conn->open_channel();
  ch1->consume_stream("s", {stream_offset::first, 0}, "workers", 10, a.handler(*ch1));
  ch2->consume_stream("s", {}, "workers", 10, b.handler(*ch2));
  publish_range(*ch, "s", 0, 200);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (a.offsets().size() + b.offsets().size() < 200 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto oa = a.offsets(), ob = b.offsets();
  BOOST_TEST(!oa.empty());
  BOOST_TEST(!ob.empty());
  std::multiset<int64_t> all(oa.begin(), oa.end());
  all.insert(ob.begin(), ob.end());
  auto want = range(0, 199);
  BOOST_TEST(std::vector<int64_t>(all.begin(), all.end()) == want,
             boost::test_tools::per_element());
  BOOST_TEST(group_of(*ch, "s", "workers").consumers == 2u);
}

BOOST_AUTO_TEST_CASE(a_consumer_leaving_a_group_hands_its_unacked_messages_to_the_others) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s", stream_options());
  publish_range(*ch, "s", 0, 20);
  reader holder;  // outlives the channel whose callbacks use it
  auto holder_ch = conn->open_channel();
  holder.ack_limit = 0;  // takes its prefetch and acks nothing
  holder_ch->consume_stream("s", {stream_offset::first, 0}, "g", 5, holder.handler(*holder_ch));
  BOOST_REQUIRE(holder.wait_for(5));
  reader other;  // outlives the channel whose callbacks use it
  auto other_ch = conn->open_channel();
  other_ch->consume_stream("s", {}, "g", 50, other.handler(*other_ch));
  BOOST_REQUIRE(other.wait_for(15));
  holder_ch->close();
  BOOST_REQUIRE(other.wait_for(20));
  auto got = other.offsets();
  std::set<int64_t> seen(got.begin(), got.end());
  BOOST_TEST(seen.size() == 20u);  // the five held ones came back to the other consumer
  std::lock_guard<std::mutex> guard(other.mutex);
  size_t redelivered = 0;
  for (const auto& d : other.got) redelivered += d.redelivered ? 1 : 0;
  BOOST_TEST(redelivered == 5u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(deleting)

BOOST_AUTO_TEST_CASE(a_stream_with_groups_behind_its_end_is_deleted_only_with_force) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s", stream_options());
  publish_range(*ch, "s", 0, 10);
  ch->commit_offset("s", "slow", 3);
  ch->commit_offset("s", "done", 9);
  auto text = failure_of([&] { ch->queue_delete("s"); }, "PRECONDITION_FAILED");
  BOOST_TEST(text.find("'slow' (lag 6)") != std::string::npos, text);
  BOOST_TEST(text.find("'done'") == std::string::npos, text);
  ch = conn->open_channel();
  BOOST_TEST(row_of(*conn, "s").messages_ready == 10u);  // still there
  BOOST_TEST(ch->queue_delete("s", false, false, true) == 10u);
  ch->queue_declare("s", stream_options());  // a new stream of that name has no groups
  BOOST_TEST(ch->list_groups("s").empty());
  BOOST_TEST(ch->queue_delete("s") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(bad_declarations_name_what_is_wrong) {
  node_process node;
  auto conn = connect_to(node);
  auto declare = [&](const std::string& name, queue_options o) {
    return failure_of([&] { conn->open_channel()->queue_declare(name, o); }, "PRECONDITION_FAILED");
  };
  auto transient = stream_options();
  transient.durable = false;
  BOOST_TEST(declare("a", transient).find("must be durable") != std::string::npos);
  auto bad_age = declare("b", stream_options({{"x-max-age", field_value::of_text("7days")}}));
  BOOST_TEST(bad_age.find("x-max-age") != std::string::npos, bad_age);
  BOOST_TEST(bad_age.find("'7days'") != std::string::npos, bad_age);
  auto ttl = declare("c", stream_options({{"x-message-ttl", field_value::of_int(5)}}));
  BOOST_TEST(ttl.find("x-message-ttl") != std::string::npos, ttl);
  queue_options classic = durable;
  classic.arguments.push_back({"x-max-age", field_value::of_text("1D")});
  BOOST_TEST(declare("d", classic).find("streams") != std::string::npos);
  auto tiny =
      declare("e", stream_options({{"x-stream-max-segment-size-bytes", field_value::of_int(10)}}));
  BOOST_TEST(tiny.find("x-stream-max-segment-size-bytes") != std::string::npos, tiny);
  BOOST_TEST(conn->list_queues().size() == 0u);
}

BOOST_AUTO_TEST_CASE(bad_consumers_commits_and_operations_are_refused_clearly) {
  node_process node;
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("s", stream_options());
  ch->queue_declare("plain", durable);
  publish_range(*ch, "s", 0, 3);
  auto noop = [](const delivery&) {};
  auto no_prefetch = failure_of([&] { conn->open_channel()->consume_stream("s", {}, {}, 0, noop); },
                                "PRECONDITION_FAILED");
  BOOST_TEST(no_prefetch.find("prefetch") != std::string::npos, no_prefetch);
  auto past =
      failure_of([&] { conn->open_channel()->commit_offset("s", "g", 3); }, "PRECONDITION_FAILED");
  BOOST_TEST(past.find("last offset is 2") != std::string::npos, past);
  auto classic = failure_of([&] { conn->open_channel()->commit_offset("plain", "g", 0); },
                            "PRECONDITION_FAILED");
  BOOST_TEST(classic.find("not a stream") != std::string::npos, classic);
  auto bad_group = failure_of(
      [&] { conn->open_channel()->consume_stream("s", {}, std::string(300, 'g'), 5, noop); },
      "PRECONDITION_FAILED");
  BOOST_TEST(bad_group.find("consumer group name") != std::string::npos, bad_group);
  failure_of([&] { conn->open_channel()->get("s"); }, "PRECONDITION_FAILED");
  failure_of([&] { conn->open_channel()->queue_purge("s"); }, "PRECONDITION_FAILED");
  failure_of([&] { conn->open_channel()->list_groups("missing"); }, "NOT_FOUND");
  BOOST_TEST(row_of(*conn, "s").messages_ready == 3u);
  BOOST_TEST(node.alive());
}

BOOST_AUTO_TEST_SUITE_END()
