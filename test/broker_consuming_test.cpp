// The broker end to end, consuming: consumers sharing a queue, priorities, prefetch and qos,
// acks, nacks and rejects, callbacks that ack or throw, and unacked messages coming back when a
// consumer, channel, connection or client process goes, or a delivery outlives the consumer
// timeout. A real warren-node on a free port, driven through the client library over loopback
// TCP; each case states one behaviour. Its own suite because it is about a message once it is
// handed out, apart from how it was declared and routed (broker_topology_test).
#include <boost/test/unit_test.hpp>

#include "broker_fixture.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <stdexcept>

using namespace warren::test::broker;

BOOST_FIXTURE_TEST_SUITE(consuming, broker_fixture)

BOOST_AUTO_TEST_CASE(consumers_share_a_queue_round_robin) {
  ch->queue_declare("q");
  auto& a = make_collector();
  auto& b = make_collector();
  auto ch2 = conn->open_channel();
  ch->consume("q", {}, a.handler());
  ch2->consume("q", {}, b.handler());
  for (int i = 0; i < 10; ++i) send("", "q", std::to_string(i));
  a.wait_for(5);
  b.wait_for(5);
  BOOST_TEST(bodies(a.got) == (strings{"0", "2", "4", "6", "8"}), boost::test_tools::per_element());
  BOOST_TEST(bodies(b.got) == (strings{"1", "3", "5", "7", "9"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(higher_priority_consumers_are_served_first) {
  ch->queue_declare("q");
  auto& low = make_collector();
  auto& high = make_collector();
  auto ch2 = conn->open_channel();
  consume_options o;
  o.prefetch = 2;
  o.priority = 5;
  ch->consume("q", {}, low.handler());
  ch2->consume("q", o, high.handler());
  for (int i = 0; i < 5; ++i) send("", "q", std::to_string(i));
  BOOST_TEST(bodies(high.wait_for(2)) == (strings{"0", "1"}), boost::test_tools::per_element());
  BOOST_TEST(bodies(low.wait_for(3)) == (strings{"2", "3", "4"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_priority_queue_hands_out_higher_priorities_first) {
  queue_options q;
  q.arguments = {{"x-max-priority", field_value::of_int(3)}};
  ch->queue_declare("pq", q);
  for (int p : {1, 3, 2}) {
    auto m = message("", "pq", std::to_string(p));
    m.properties.priority = static_cast<uint8_t>(p);
    ch->publish(m);
  }
  strings got;
  while (auto d = ch->get("pq", true)) got.push_back(d->body);
  BOOST_TEST(got == (strings{"3", "2", "1"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(prefetch_bounds_unacked_deliveries) {
  ch->queue_declare("q");
  for (int i = 0; i < 5; ++i) send("", "q", std::to_string(i));
  auto& got = make_collector();
  consume_options o;
  o.prefetch = 2;
  ch->consume("q", o, got.handler());
  auto first = got.wait_for(2);
  auto q = wait_queue("q", [](const queue_row& r) { return r.messages_unacked == 2; });
  BOOST_TEST(q.messages_ready == 3u);
  ch->ack(first[0].delivery_tag);
  got.wait_for(3);
  q = wait_queue("q", [](const queue_row& r) { return r.messages_ready == 2; });
  BOOST_TEST(q.messages_unacked == 2u);
}

BOOST_AUTO_TEST_CASE(qos_sets_the_default_prefetch_of_later_consumers) {
  ch->queue_declare("q");
  for (int i = 0; i < 5; ++i) send("", "q", std::to_string(i));
  ch->qos(1);
  auto& got = make_collector();
  ch->consume("q", {}, got.handler());
  got.wait_for(1);
  auto q = wait_queue("q", [](const queue_row& r) { return r.messages_unacked == 1; });
  BOOST_TEST(q.messages_ready == 4u);
}

BOOST_AUTO_TEST_CASE(ack_multiple_settles_everything_up_to_the_tag) {
  ch->queue_declare("q");
  for (int i = 0; i < 4; ++i) send("", "q", std::to_string(i));
  auto& got = make_collector();
  ch->consume("q", {}, got.handler());
  auto ds = got.wait_for(4);
  ch->ack(ds[2].delivery_tag, true);
  auto q = wait_queue("q", [](const queue_row& r) { return r.messages_unacked == 1; });
  BOOST_TEST(q.messages_ready == 0u);
}

BOOST_AUTO_TEST_CASE(nack_with_requeue_redelivers_and_without_drops) {
  ch->queue_declare("q");
  send("", "q", "again");
  send("", "q", "gone");
  auto first = ch->get("q");
  auto second = ch->get("q");
  ch->nack(first->delivery_tag, false, true);
  ch->nack(second->delivery_tag, false, false);
  auto back = ch->get("q");
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->body == "again");
  BOOST_TEST(back->redelivered);
  BOOST_TEST(!ch->get("q").has_value());
}

BOOST_AUTO_TEST_CASE(reject_with_requeue_puts_the_message_back_first) {
  ch->queue_declare("q");
  send("", "q", "1");
  send("", "q", "2");
  auto d = ch->get("q");
  ch->reject(d->delivery_tag, true);
  auto again = ch->get("q");
  BOOST_TEST(again->body == "1");
  BOOST_TEST(again->redelivered);
}

BOOST_AUTO_TEST_CASE(acking_an_unknown_tag_fails_once_and_leaves_the_channel_open) {
  ch->queue_declare("q");
  send("", "q", "kept");
  auto& c = make_collector();
  consume_options o;
  o.prefetch = 10;
  ch->consume("q", o, c.handler(), c.on_cancel());
  c.wait_for(1);
  ch->ack(999);
  auto e = later_error([&] { ch->queue_declare("q"); });
  BOOST_TEST(e.code() == "PRECONDITION_FAILED");
  BOOST_TEST((e.kind() == error_code::precondition_failed));
  BOOST_TEST(e.text().find("999") != std::string::npos, e.text());
  // Reported once; the channel and its consumer go on.
  ch->queue_declare("q");
  send("", "q", "after");
  BOOST_TEST(bodies(c.wait_for(2)) == (strings{"kept", "after"}));
  BOOST_TEST(c.cancellations.empty());
}

BOOST_AUTO_TEST_CASE(acks_made_in_callbacks_settle_every_delivery_and_are_counted) {
  ch->queue_declare("q");
  std::vector<outbound_message> batch;
  for (int i = 0; i < 500; ++i) batch.push_back(message("", "q", "body-" + std::to_string(i)));
  ch->publish_batch(batch).get();
  uint64_t body_bytes = 0;
  for (const auto& m : batch) body_bytes += m.body.size();
  consume_options o;
  o.prefetch = 10;
  auto* raw = ch.get();
  ch->consume("q", o, [raw](const delivery& d) { raw->ack(d.delivery_tag); });
  auto q = wait_queue("q", [](const queue_row& r) {
    return r.messages_ready == 0 && r.messages_unacked == 0 && r.traffic.acked == 500;
  });
  BOOST_TEST(q.traffic.published == 500u);
  BOOST_TEST(q.traffic.delivered == 500u);
  BOOST_TEST(q.traffic.redelivered == 0u);
  BOOST_TEST(q.traffic.bytes_in == body_bytes);
  BOOST_TEST(q.traffic.bytes_out == body_bytes);
  auto stats = conn->stats();
  BOOST_REQUIRE(stats.connections.size() == 1u);
  const auto& mine = stats.connections.front().traffic;
  BOOST_TEST(mine.published == 500u);
  BOOST_TEST(mine.delivered == 500u);
  BOOST_TEST(mine.acked == 500u);
  BOOST_TEST(stats.rss_bytes > 0u);
}

BOOST_AUTO_TEST_CASE(a_tag_acked_twice_is_an_error_and_every_known_ack_stands) {
  ch->queue_declare("q");
  send("", "q", "first");
  send("", "q", "second");
  auto a = ch->get("q");
  auto b = ch->get("q");
  // Made back to back, these may travel in one ackEach call or in several: either way the
  // repeated tag is refused and both real acks stand.
  ch->ack(a->delivery_tag);
  ch->ack(a->delivery_tag);
  ch->ack(b->delivery_tag);
  BOOST_TEST(later_error([&] { ch->queue_declare("q"); }).code() == "PRECONDITION_FAILED");
  auto q = wait_queue("q", [](const queue_row& r) { return r.traffic.acked == 2; });
  BOOST_TEST(q.messages_unacked == 0u);
  BOOST_TEST(q.messages_ready == 0u);
  BOOST_TEST(q.traffic.redelivered == 0u);
}

BOOST_AUTO_TEST_CASE(a_throwing_callback_ends_its_consumer_and_its_messages_are_redelivered) {
  ch->queue_declare("q");
  for (int i = 0; i < 3; ++i) send("", "q", "m" + std::to_string(i));
  auto& c = make_collector();
  consume_options o;
  o.prefetch = 10;
  std::atomic<int> calls{0};
  ch->consume(
      "q", o,
      [&](const delivery&) {
        ++calls;
        throw std::runtime_error("cannot parse the order");
      },
      c.on_cancel());
  c.wait_for_cancel();
  BOOST_TEST(calls.load() == 1);  // no callback after the one that threw
  BOOST_TEST(c.cancellations.front().find(
                 "deliver failed: the message callback threw: cannot parse the order") !=
                 std::string::npos,
             c.cancellations.front());
  auto q = wait_queue("q", [](const queue_row& r) { return r.messages_ready == 3; });
  BOOST_TEST(q.consumers == 0u);
  BOOST_TEST(q.messages_unacked == 0u);
  auto again = ch->get("q");  // the channel stays open
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(again->redelivered);
  BOOST_TEST(again->body == "m0");
}

BOOST_AUTO_TEST_CASE(unacked_messages_return_when_the_consumer_is_cancelled) {
  ch->queue_declare("q");
  send("", "q", "m");
  auto& got = make_collector();
  auto tag = ch->consume("q", {}, got.handler());
  got.wait_for(1);
  ch->cancel(tag);
  auto d = ch->get("q");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->redelivered);
}

// An ack made in a callback is gathered until the callback returns; a cancel made meanwhile from
// another thread must not overtake it (the cancel would requeue the message and the late ack
// then close the channel over an unknown tag).
BOOST_AUTO_TEST_CASE(an_ack_made_in_a_callback_is_not_overtaken_by_a_cancel) {
  ch->queue_declare("q");
  send("", "q", "m");
  std::promise<void> acked;
  std::promise<void> cancelled;
  auto cancel_done = cancelled.get_future().share();
  auto* raw = ch.get();
  consume_options o;
  o.prefetch = 1;
  auto tag = ch->consume("q", o, [&, raw, cancel_done](const delivery& d) {
    raw->ack(d.delivery_tag);
    acked.set_value();
    cancel_done.wait();  // the callback returns only after the cancel was answered
  });
  acked.get_future().wait();
  ch->cancel(tag);
  cancelled.set_value();
  auto q = wait_queue("q", [](const queue_row& r) { return r.traffic.acked == 1; });
  BOOST_TEST(q.messages_ready == 0u);
  BOOST_TEST(q.messages_unacked == 0u);
  BOOST_TEST(ch->queue_declare("q", {}).message_count == 0u);  // the channel is still open
}

BOOST_AUTO_TEST_CASE(unacked_messages_return_when_the_channel_closes) {
  ch->queue_declare("q");
  send("", "q", "m");
  auto ch2 = conn->open_channel();
  auto& got = make_collector();
  ch2->consume("q", {}, got.handler());
  got.wait_for(1);
  ch2->close();
  auto d = ch->get("q");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->redelivered);
}

BOOST_AUTO_TEST_CASE(unacked_messages_return_when_the_connection_closes) {
  ch->queue_declare("q");
  send("", "q", "m");
  {
    auto other = open();
    auto och = other->open_channel();
    auto& got = make_collector();
    och->consume("q", {}, got.handler());
    got.wait_for(1);
  }  // destroyed without an explicit close
  auto q = wait_queue("q", [](const queue_row& r) { return r.messages_ready == 1; });
  BOOST_TEST(q.messages_unacked == 0u);
  BOOST_TEST(ch->get("q")->redelivered);
}

BOOST_AUTO_TEST_CASE(unacked_messages_return_when_the_client_is_killed) {
  ch->queue_declare("q");
  for (int i = 0; i < 10; ++i) send("", "q", std::to_string(i));
  int out_fd = -1;
  pid_t pid = warren::test::spawn_command(
      {HOLD_UNACKED_PATH, std::to_string(node.port()), "q", "4"}, out_fd);
  // Wait until the helper printed its 4 deliveries.
  std::string seen;
  char buf[256];
  while (std::count(seen.begin(), seen.end(), '\n') < 4) {
    auto n = ::read(out_fd, buf, sizeof buf);
    BOOST_REQUIRE(n > 0);
    seen.append(buf, static_cast<size_t>(n));
  }
  auto held = wait_queue("q", [](const queue_row& r) { return r.messages_unacked == 4; });
  BOOST_TEST(held.messages_ready == 6u);
  ::kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(out_fd);
  auto back = wait_queue("q", [](const queue_row& r) { return r.messages_ready == 10; });
  BOOST_TEST(back.messages_unacked == 0u);
  auto& got = make_collector();
  ch->consume("q", {}, got.handler());
  auto all = got.wait_for(10);
  BOOST_TEST(bodies(all) == (strings{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}),
             boost::test_tools::per_element());
  for (int i = 0; i < 4; ++i) BOOST_TEST(all[i].redelivered);
  for (int i = 4; i < 10; ++i) BOOST_TEST(!all[i].redelivered);
}

BOOST_AUTO_TEST_CASE(an_exclusive_consumer_keeps_others_out) {
  ch->queue_declare("q");
  consume_options excl;
  excl.exclusive = true;
  auto& a = make_collector();
  ch->consume("q", excl, a.handler());
  auto ch2 = conn->open_channel();
  auto& b = make_collector();
  BOOST_TEST(expect_error([&] { ch2->consume("q", {}, b.handler()); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(no_ack_consumers_leave_nothing_unacked) {
  ch->queue_declare("q");
  for (int i = 0; i < 3; ++i) send("", "q", "m");
  auto& got = make_collector();
  consume_options o;
  o.no_ack = true;
  ch->consume("q", o, got.handler());
  got.wait_for(3);
  auto q = queue_stats("q");
  BOOST_TEST(q.messages_unacked == 0u);
  BOOST_TEST(q.messages_ready == 0u);
}

BOOST_AUTO_TEST_CASE(consumers_are_listed_with_their_queue_and_prefetch) {
  ch->queue_declare("q");
  consume_options o;
  o.tag = "my-tag";
  o.prefetch = 7;
  auto& got = make_collector();
  ch->consume("q", o, got.handler());
  auto rows = conn->list_consumers();
  BOOST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0].consumer_tag == "my-tag");
  BOOST_TEST(rows[0].queue == "q");
  BOOST_TEST(rows[0].prefetch == 7u);
  BOOST_TEST(rows[0].connection == "test");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(a_delivery_unacked_past_the_consumer_timeout_closes_its_channel) {
  collector got;
  node_process node({"--consumer-timeout", "300"});
  connect_options o;
  o.port = node.port();
  auto conn = connection::open(o);
  auto ch = conn->open_channel();
  ch->queue_declare("slow");
  outbound_message m;
  m.routing_key = "slow";
  m.body = "held";
  ch->publish(m);
  ch->consume("slow", {}, got.handler(), got.on_cancel());
  got.wait_for(1);
  got.wait_for_cancel();
  BOOST_TEST(got.cancellations[0].find("PRECONDITION_FAILED") != std::string::npos,
             got.cancellations[0]);
  BOOST_TEST(got.cancellations[0].find("timed out") != std::string::npos, got.cancellations[0]);
  auto other = conn->open_channel();
  auto back = other->get("slow", true);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->body == "held");
  BOOST_TEST(back->redelivered);
}
