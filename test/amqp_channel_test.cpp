// The AMQP channel state machine and wire details, with raw frames sent the way real clients
// send them (several methods and contents in one write) against a real node.
//
// The rules (AMQP 0-9-1 and RabbitMQ): after the server sends channel.close it discards every
// frame on that channel until channel.close-ok; a close from both sides at once settles; every
// delivery on a channel, by push or get, acked or not, takes the next tag from 1. The
// connection's own methods (channel 0) are in amqp_connection_test.
#include <boost/test/unit_test.hpp>

#include "amqp_channel_fixture.hpp"
#include "amqp_raw_client.hpp"
#include "subprocess.hpp"

#include <chrono>
#include <thread>

using namespace warren::amqp;
using warren::test::channel_one;
using warren::test::method_frame;
using warren::test::node_process;
using warren::test::publish_frames;
using warren::test::raw_client;

namespace {

const method_id channel_close{20, 40}, channel_close_ok{20, 41}, channel_open_ok{20, 11};
const method_id get_ok{60, 71};

std::string close_frame(uint16_t channel, uint16_t code) {
  auto w = method_payload(channel_close);
  w.short_uint(code);
  w.short_string("bye");
  w.short_uint(0);
  w.short_uint(0);
  return method_frame(channel, std::move(w));
}

std::string close_ok_frame(uint16_t channel) {
  return method_frame(channel, method_payload(channel_close_ok));
}

// Waits for the next method and checks its id; returns its arguments.
std::string expect(raw_client& c, method_id want) {
  auto [id, args] = c.next_method();
  BOOST_REQUIRE_MESSAGE(id == want,
                        "expected " << method_name(want) << ", got " << method_name(id));
  return args;
}

uint16_t reply_code_of(const std::string& close_args) {
  return reader(close_args).short_uint();
}

void send_queue_declare(raw_client& c, uint16_t channel, const std::string& name,
                        const table& arguments) {
  auto d = method_payload({50, 10});
  d.short_uint(0);
  d.short_string(name);
  d.bits({false, false, false, false, false});
  d.field_table(arguments);
  c.send_method(channel, std::move(d));
}

void declare_queue(raw_client& c, uint16_t channel, const std::string& name) {
  send_queue_declare(c, channel, name, {});
  expect(c, {50, 11});
}

// Waits for `want`, counting the deliveries (basic.deliver) that arrive before it.
std::string expect_counting_deliveries(raw_client& c, method_id want, int& deliveries) {
  for (;;) {
    auto [id, args] = c.next_method();
    if (id == method_id{60, 60}) {
      ++deliveries;
      continue;
    }
    BOOST_REQUIRE_MESSAGE(id == want,
                          "expected " << method_name(want) << ", got " << method_name(id));
    return args;
  }
}

// Ready messages in `queue`, from a passive declare (deliveries before the answer are counted).
uint32_t ready_in(raw_client& c, uint16_t channel, const std::string& queue, int& deliveries) {
  auto d = method_payload({50, 10});
  d.short_uint(0);
  d.short_string(queue);
  d.bits({true, false, false, false, false});
  d.field_table({});
  c.send_method(channel, std::move(d));
  auto args = expect_counting_deliveries(c, {50, 11}, deliveries);
  reader r(args);
  r.short_string();
  return r.long_uint();
}

// Dead-lettering is asynchronous (as in RabbitMQ): asks until `queue` has `n` ready, or the
// guard time passed; returns the last count.
uint32_t ready_eventually(raw_client& c, uint16_t channel, const std::string& queue, uint32_t n) {
  auto deadline = std::chrono::steady_clock::now() + warren::test::patience;
  int deliveries = 0;
  for (;;) {
    auto ready = ready_in(c, channel, queue, deliveries);
    if (ready == n || std::chrono::steady_clock::now() > deadline) return ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void consume(raw_client& c, uint16_t channel, const std::string& queue, const std::string& tag,
             int& deliveries) {
  auto w = method_payload({60, 20});
  w.short_uint(0);
  w.short_string(queue);
  w.short_string(tag);
  w.bits({false, false, false, false});
  w.field_table({});
  c.send_method(channel, std::move(w));
  expect_counting_deliveries(c, {60, 21}, deliveries);
}

void qos(raw_client& c, uint16_t channel, uint16_t prefetch, bool global) {
  auto w = method_payload({60, 10});
  w.long_uint(0);
  w.short_uint(prefetch);
  w.bits({global});
  c.send_method(channel, std::move(w));
  expect(c, {60, 11});
}

// Opening the channel again proves the old one was settled and forgotten.
void expect_channel_reopens(raw_client& c, uint16_t channel) {
  c.open_channel(channel);
}

}  // namespace

// Deleting a queue the same connection consumes from: queue.delete-ok comes before the
// consumer's basic.cancel, as RabbitMQ sends them. amqplib settles the delete when its answer
// comes; a cancel first ends its test (and its connection) with the delete still unanswered.
BOOST_FIXTURE_TEST_CASE(delete_ok_comes_before_the_cancel_of_its_own_consumer, channel_one) {
  declare_queue(c, 1, "doomed");
  int deliveries = 0;
  consume(c, 1, "doomed", "ctag", deliveries);
  auto del = method_payload({50, 40});
  del.short_uint(0);
  del.short_string("doomed");
  del.bits({false, false, false});
  c.send_method(1, std::move(del));
  BOOST_TEST((c.next_method().first == method_id{50, 41}));
  BOOST_TEST((c.next_method().first == method_id{60, 30}));
}

BOOST_FIXTURE_TEST_CASE(frames_after_a_channel_error_are_discarded_until_close_ok, channel_one) {
  c.send(publish_frames(1, "no-such-exchange", "k", "one"));
  BOOST_TEST(reply_code_of(expect(c, channel_close)) == 404);
  // A client that had not read the close yet keeps publishing: its frames are dropped, not
  // taken for a protocol error.
  c.send(publish_frames(1, "no-such-exchange", "k", "two") + publish_frames(1, "", "k", "three") +
         close_ok_frame(1));
  expect_channel_reopens(c, 1);
}

BOOST_FIXTURE_TEST_CASE(the_body_of_an_oversize_message_is_discarded_with_its_channel,
                        channel_one) {
  c.open_channel(2);
  c.send(publish_frames(1, "", "q", std::string(1000, 'x'), uint64_t{1} << 30));
  BOOST_TEST(reply_code_of(expect(c, channel_close)) == 406);
  c.send(close_ok_frame(1));
  declare_queue(c, 2, "still-here");  // the connection and its other channel live on
  expect_channel_reopens(c, 1);
}

BOOST_FIXTURE_TEST_CASE(a_client_close_behind_a_failing_publish_is_answered_after_the_error,
                        channel_one) {
  c.send(publish_frames(1, "no-such-exchange", "k", "lost") + close_frame(1, 200));
  BOOST_TEST(reply_code_of(expect(c, channel_close)) == 404);
  c.send(close_ok_frame(1));
  expect(c, channel_close_ok);
  expect_channel_reopens(c, 1);
}

BOOST_FIXTURE_TEST_CASE(closes_from_both_sides_at_once_settle, channel_one) {
  c.send(publish_frames(1, "no-such-exchange", "k", "lost"));
  BOOST_TEST(reply_code_of(expect(c, channel_close)) == 404);
  // The client had not seen that close yet: it closes too, then answers the node's.
  c.send(close_frame(1, 200) + close_ok_frame(1));
  expect(c, channel_close_ok);
  expect_channel_reopens(c, 1);
}

BOOST_FIXTURE_TEST_CASE(every_get_takes_the_next_delivery_tag_acked_or_not, channel_one) {
  declare_queue(c, 1, "tags");
  for (int i = 0; i < 4; ++i) c.send(publish_frames(1, "", "tags", "m" + std::to_string(i)));
  std::vector<uint64_t> tags;
  for (bool no_ack : {true, false, true, false}) {
    auto g = method_payload({60, 70});
    g.short_uint(0);
    g.short_string("tags");
    g.bits({no_ack});
    c.send_method(1, std::move(g));
    auto args = expect(c, get_ok);
    tags.push_back(reader(args).longlong_uint());
  }
  BOOST_TEST(tags == (std::vector<uint64_t>{1, 2, 3, 4}), boost::test_tools::per_element());
}

// Issue 10, item 6: global=true is one limit for all of the channel's consumers (it was applied
// per consumer: two consumers with global prefetch 2 got 2 + 2).
BOOST_FIXTURE_TEST_CASE(a_global_prefetch_bounds_all_consumers_of_the_channel_together,
                        channel_one) {
  int deliveries = 0;
  for (const char* q : {"g1", "g2"}) {
    declare_queue(c, 1, q);
    for (int i = 0; i < 5; ++i) c.send(publish_frames(1, "", q, "m"));
    BOOST_REQUIRE(ready_in(c, 1, q, deliveries) == 5u);
  }
  qos(c, 1, 2, true);
  consume(c, 1, "g1", "a", deliveries);
  consume(c, 1, "g2", "b", deliveries);
  auto handed_out = 10 - ready_in(c, 1, "g1", deliveries) - ready_in(c, 1, "g2", deliveries);
  BOOST_TEST(handed_out == 2u);
  // An ack frees one: exactly one more is handed out.
  auto ack = method_payload({60, 80});
  ack.longlong_uint(1);
  ack.bits({false});
  c.send_method(1, std::move(ack));
  handed_out = 10 - ready_in(c, 1, "g1", deliveries) - ready_in(c, 1, "g2", deliveries);
  BOOST_TEST(handed_out == 3u);
}

BOOST_FIXTURE_TEST_CASE(per_consumer_and_global_prefetch_apply_together, channel_one) {
  int deliveries = 0;
  declare_queue(c, 1, "both");
  for (int i = 0; i < 10; ++i) c.send(publish_frames(1, "", "both", "m"));
  BOOST_REQUIRE(ready_in(c, 1, "both", deliveries) == 10u);
  qos(c, 1, 3, false);  // each consumer: 3
  qos(c, 1, 5, true);   // the channel: 5
  consume(c, 1, "both", "a", deliveries);
  BOOST_TEST(10 - ready_in(c, 1, "both", deliveries) == 3u);  // its own limit first
  consume(c, 1, "both", "b", deliveries);
  BOOST_TEST(10 - ready_in(c, 1, "both", deliveries) == 5u);  // then the channel's
}

// Issue 10, item 7: the 406 names the argument that differs, in RabbitMQ's words.
BOOST_FIXTURE_TEST_CASE(an_inequivalent_redeclare_names_the_argument_that_differs, channel_one) {
  send_queue_declare(c, 1, "ttl", {{"x-message-ttl", value::of_int(1000)}});
  expect(c, {50, 11});
  send_queue_declare(c, 1, "ttl", {{"x-message-ttl", value::of_int(2000)}});
  auto args = expect(c, channel_close);
  reader r(args);
  BOOST_TEST(r.short_uint() == 406);
  BOOST_TEST(r.short_string() ==
             "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'ttl' in vhost "
             "'/': received '2000' but current is '1000'");
  c.send(close_ok_frame(1));
  c.open_channel(1);
  send_queue_declare(c, 1, "ttl", {});
  args = expect(c, channel_close);
  reader again(args);
  again.short_uint();
  BOOST_TEST(again.short_string().find("received 'none' but current is '1000'") !=
             std::string::npos);
}

namespace {

// One header of every AMQP field type, with values that only fit their own width.
table every_field_type() {
  auto typed = [](char type, int64_t i) {
    value v;
    v.type = type;
    v.integer = i;
    return v;
  };
  value f, d, dec, text, bytes, none, arr;
  f.type = 'f';
  f.floating = 1.5;
  d.type = 'd';
  d.floating = 2.25;
  dec.type = 'D';
  dec.scale = 1;
  dec.integer = 15;
  text = value::of_string("text");
  bytes.type = 'x';
  bytes.bytes = std::string("\0\1\2", 3);
  none.type = 'V';
  arr.type = 'A';
  arr.nested_array = std::make_shared<array>(array{value::of_int(1), value::of_string("a")});
  return {{"b", typed('b', -5)},
          {"B", typed('B', 200)},
          {"s", typed('s', -300)},
          {"u", typed('u', 60000)},
          {"I", typed('I', -70000)},
          {"i", typed('i', 4000000000)},
          {"l", typed('l', -5000000000)},
          {"L", typed('L', -6000000000)},
          {"T", typed('T', 1700000000)},
          {"f", f},
          {"d", d},
          {"D", dec},
          {"t", value::of_bool(true)},
          {"S", text},
          {"x", bytes},
          {"V", none},
          {"A", arr},
          {"F", value::of_table({{"k", value::of_int(2)}})}};
}

// Publishes one message with `headers` to `queue` (persistent when asked).
void publish_with_headers(raw_client& c, uint16_t channel, const std::string& queue,
                          const table& headers, bool persistent) {
  auto m = method_payload({60, 40});
  m.short_uint(0);
  m.short_string("");
  m.short_string(queue);
  m.bits({false, false});
  auto out = method_frame(channel, std::move(m));
  content_header h;
  h.body_size = 4;
  h.properties.headers = headers;
  if (persistent) h.properties.delivery_mode = 2;
  write_frame(out, frame_type::header, channel, content_header_payload(h));
  write_frame(out, frame_type::body, channel, "body");
  c.send(out);
}

// basic.get from `queue`; returns the headers of the message it got.
table get_headers(raw_client& c, uint16_t channel, const std::string& queue) {
  auto g = method_payload({60, 70});
  g.short_uint(0);
  g.short_string(queue);
  g.bits({true});
  c.send_method(channel, std::move(g));
  expect(c, get_ok);
  auto header = c.next_frame();
  BOOST_REQUIRE(header.has_value());
  BOOST_REQUIRE(header->type == frame_type::header);
  auto h = parse_content_header(header->payload);
  BOOST_REQUIRE(h.properties.headers.has_value());
  return *h.properties.headers;
}

void expect_same_types(const table& got, const table& sent) {
  BOOST_REQUIRE(got.size() == sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    auto match = std::find_if(got.begin(), got.end(),
                              [&](const auto& kv) { return kv.first == sent[i].first; });
    BOOST_REQUIRE(match != got.end());
    BOOST_TEST(match->second.type == sent[i].second.type, "type of " << sent[i].first);
    BOOST_TEST((match->second == sent[i].second), "value of " << sent[i].first);
  }
}

}  // namespace

// Issue 10, item 4: field values come back in the type they were published with, byte for
// byte, as RabbitMQ returns them; also after a restart from disk.
BOOST_AUTO_TEST_CASE(header_values_come_back_in_the_type_they_were_published_with) {
  warren::test::temp_dir dir;
  auto sent = every_field_type();
  {
    node_process node({}, dir.path());
    raw_client c(node.amqp_port());
    c.handshake();
    c.open_channel(1);
    declare_queue(c, 1, "transient");
    publish_with_headers(c, 1, "transient", sent, false);
    expect_same_types(get_headers(c, 1, "transient"), sent);
    auto d = method_payload({50, 10});
    d.short_uint(0);
    d.short_string("kept");
    d.bits({false, true, false, false, false});  // durable
    d.field_table({});
    c.send_method(1, std::move(d));
    expect(c, {50, 11});
    publish_with_headers(c, 1, "kept", sent, true);
    int deliveries = 0;
    BOOST_REQUIRE(ready_in(c, 1, "kept", deliveries) == 1u);
  }
  node_process node({}, dir.path());
  raw_client c(node.amqp_port());
  c.handshake();
  c.open_channel(1);
  expect_same_types(get_headers(c, 1, "kept"), sent);
}

namespace {

const value* lookup(const table& t, const std::string& key) {
  for (const auto& [k, v] : t)
    if (k == key) return &v;
  return nullptr;
}

// basic.get with acks; returns the delivery tag and the message's headers (empty if none).
std::pair<uint64_t, table> get_for_ack(raw_client& c, uint16_t channel, const std::string& queue,
                                       std::string* body = nullptr) {
  auto g = method_payload({60, 70});
  g.short_uint(0);
  g.short_string(queue);
  g.bits({false});
  c.send_method(channel, std::move(g));
  auto args = expect(c, get_ok);
  auto tag = reader(args).longlong_uint();
  auto header = c.next_frame();
  BOOST_REQUIRE(header.has_value());
  auto h = parse_content_header(header->payload);
  auto content = c.next_frame();
  BOOST_REQUIRE(content.has_value());
  if (body != nullptr) *body = content->payload;
  return {tag, h.properties.headers.value_or(table{})};
}

void reject(raw_client& c, uint16_t channel, uint64_t tag) {
  auto w = method_payload({60, 90});
  w.longlong_uint(tag);
  w.bits({false});  // not requeued: dead-lettered
  c.send_method(channel, std::move(w));
}

}  // namespace

// Issue 10, item 5: RabbitMQ's x-death, counted per queue and reason.
BOOST_FIXTURE_TEST_CASE(dead_letters_carry_x_death_and_count_repeated_deaths, channel_one) {
  // Rejected messages of "loop" go back to "loop" through the default exchange.
  send_queue_declare(c, 1, "loop",
                     {{"x-dead-letter-exchange", value::of_string("")},
                      {"x-dead-letter-routing-key", value::of_string("loop")}});
  expect(c, {50, 11});
  c.send(publish_frames(1, "", "loop", "job"));
  for (int death = 1; death <= 2; ++death) {
    auto [tag, headers] = get_for_ack(c, 1, "loop");
    reject(c, 1, tag);
    BOOST_REQUIRE(ready_eventually(c, 1, "loop", 1) == 1u);  // back, not dropped: a rejection
  }
  auto [tag, headers] = get_for_ack(c, 1, "loop");
  const auto* deaths = lookup(headers, "x-death");
  BOOST_REQUIRE(deaths != nullptr);
  BOOST_REQUIRE(deaths->type == 'A');
  BOOST_REQUIRE(deaths->nested_array->size() == 1u);  // one entry for (loop, rejected)
  const auto& entry = *deaths->nested_array->front().nested_table;
  BOOST_TEST(lookup(entry, "count")->integer == 2);
  BOOST_TEST(lookup(entry, "count")->type == 'l');
  BOOST_TEST(lookup(entry, "reason")->bytes == "rejected");
  BOOST_TEST(lookup(entry, "queue")->bytes == "loop");
  BOOST_TEST(lookup(entry, "exchange")->bytes == "");
  BOOST_TEST(lookup(entry, "time")->type == 'T');
  BOOST_TEST(lookup(entry, "routing-keys")->nested_array->front().bytes == "loop");
  BOOST_TEST(lookup(headers, "x-first-death-queue")->bytes == "loop");
  BOOST_TEST(lookup(headers, "x-first-death-reason")->bytes == "rejected");
}

// A message that dies again in a queue it already died in, with no rejection in between, is
// dropped (RabbitMQ's cycle rule) instead of going round for ever.
BOOST_FIXTURE_TEST_CASE(a_dead_letter_cycle_without_a_rejection_is_dropped, channel_one) {
  send_queue_declare(c, 1, "full",
                     {{"x-max-length", value::of_int(1)},
                      {"x-dead-letter-exchange", value::of_string("")},
                      {"x-dead-letter-routing-key", value::of_string("full")}});
  expect(c, {50, 11});
  c.send(publish_frames(1, "", "full", "first") + publish_frames(1, "", "full", "second"));
  int deliveries = 0;
  BOOST_REQUIRE(ready_in(c, 1, "full", deliveries) == 1u);
  std::string body;
  auto [tag, headers] = get_for_ack(c, 1, "full", &body);
  BOOST_TEST(body == "second");  // "first" overflowed, came back once, and was dropped
  BOOST_TEST(lookup(headers, "x-death") == nullptr);
  BOOST_TEST(node.wait_for_log("a dead-letter cycle"));
}

namespace {

std::string no_wait_queue_declare(const std::string& name) {
  auto d = method_payload({50, 10});
  d.short_uint(0);
  d.short_string(name);
  d.bits({false, true, false, false, true});  // durable, no-wait
  d.field_table({});
  return method_frame(1, std::move(d));
}

std::string no_wait_exchange_declare(const std::string& name, const std::string& type,
                                     bool durable = true) {
  auto d = method_payload({40, 10});
  d.short_uint(0);
  d.short_string(name);
  d.short_string(type);
  d.bits({false, durable, false, false, true});  // no-wait
  d.field_table({});
  return method_frame(1, std::move(d));
}

std::string no_wait_queue_bind(const std::string& queue, const std::string& exchange,
                               const std::string& key) {
  auto b = method_payload({50, 20});
  b.short_uint(0);
  b.short_string(queue);
  b.short_string(exchange);
  b.short_string(key);
  b.bits({true});  // no-wait
  b.field_table({});
  return method_frame(1, std::move(b));
}

}  // namespace

// A channel's methods take effect in the order it sent them, answered or not: what it declared
// and bound with no-wait is there for the publishes right behind, although durable records are
// committed before they take effect (kombu and the Go client publish right after no-wait
// declares).
BOOST_FIXTURE_TEST_CASE(what_a_channel_declared_without_waiting_takes_its_next_publishes,
                        channel_one) {
  c.send(no_wait_queue_declare("nw") + no_wait_exchange_declare("nw-x", "direct") +
         no_wait_queue_bind("nw", "nw-x", "k") + publish_frames(1, "", "nw", "by name") +
         publish_frames(1, "nw-x", "k", "by binding"));
  BOOST_TEST(ready_eventually(c, 1, "nw", 2) == 2u);
}

namespace {

std::string no_wait_exchange_delete(const std::string& name) {
  auto d = method_payload({40, 20});
  d.short_uint(0);
  d.short_string(name);
  d.bits({false, true});  // if-unused off, no-wait
  return method_frame(1, std::move(d));
}

std::string no_wait_queue_purge(const std::string& name) {
  auto p = method_payload({50, 30});
  p.short_uint(0);
  p.short_string(name);
  p.bits({true});  // no-wait
  return method_frame(1, std::move(p));
}

}  // namespace

// A publish behind a deleted and declared-again exchange goes to the new one, never through the
// one deleted (the connection's lookup of it is forgotten with the delete).
BOOST_FIXTURE_TEST_CASE(a_publish_after_an_exchange_is_deleted_and_declared_again_finds_the_new_one,
                        channel_one) {
  // Transient: its delete is answered at once, with no commit to wait for.
  c.send(no_wait_queue_declare("old-q") + no_wait_queue_declare("new-q") +
         no_wait_exchange_declare("swap", "direct", false) +
         no_wait_queue_bind("old-q", "swap", "k") + publish_frames(1, "swap", "k", "first"));
  BOOST_REQUIRE(ready_eventually(c, 1, "old-q", 1) == 1u);  // "swap" is known to the connection
  c.send(no_wait_exchange_delete("swap") + no_wait_exchange_declare("swap", "direct", false) +
         no_wait_queue_bind("new-q", "swap", "k") + publish_frames(1, "swap", "k", "second"));
  BOOST_TEST(ready_eventually(c, 1, "new-q", 1) == 1u);
  int deliveries = 0;
  BOOST_TEST(ready_in(c, 1, "old-q", deliveries) == 1u);
}

// A purge takes what came before it on the channel, never a publish sent after it.
BOOST_FIXTURE_TEST_CASE(a_purge_takes_nothing_published_after_it, channel_one) {
  c.send(no_wait_queue_declare("purged") + publish_frames(1, "", "purged", "before"));
  BOOST_REQUIRE(ready_eventually(c, 1, "purged", 1) == 1u);
  c.send(no_wait_queue_purge("purged") + publish_frames(1, "", "purged", "after"));
  BOOST_TEST(ready_eventually(c, 1, "purged", 1) == 1u);
  std::string body;
  get_for_ack(c, 1, "purged", &body);
  BOOST_TEST(body == "after");
}
