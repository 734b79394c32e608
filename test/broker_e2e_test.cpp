// The broker end to end: a real warren-node on a free port, driven through the client library
// over loopback TCP. Each case states one behaviour.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

using namespace warren::client;
using warren::test::node_process;

namespace {

// Guards against a hung test only; never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

// Collects deliveries from a consumer callback and lets the test wait for a count.
struct collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<delivery> got;
  std::vector<std::string> cancellations;

  channel::message_handler handler() {
    return [this](const delivery& d) {
      std::lock_guard<std::mutex> guard(mutex);
      got.push_back(d);
      changed.notify_all();
    };
  }
  channel::cancel_handler on_cancel() {
    return [this](const std::string& tag, const std::string& reason) {
      std::lock_guard<std::mutex> guard(mutex);
      cancellations.push_back(tag + ": " + reason);
      changed.notify_all();
    };
  }
  std::vector<delivery> wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE_MESSAGE(changed.wait_for(lock, patience, [&] { return got.size() >= n; }),
                          "expected " << n << " deliveries, got " << got.size());
    return got;
  }
  void wait_for_cancel() {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE(changed.wait_for(lock, patience, [&] { return !cancellations.empty(); }));
  }
};

struct fixture {
  // Collectors outlive every connection and channel below, since callbacks can run until a
  // consumer's connection is gone (requeued messages go to whoever still consumes).
  std::deque<collector> collectors;
  node_process node;
  std::unique_ptr<connection> conn = open();
  std::unique_ptr<channel> ch = conn->open_channel();

  std::unique_ptr<connection> open(const std::string& vhost = "/",
                                   const std::string& name = "test") {
    connect_options o;
    o.port = node.port();
    o.vhost = vhost;
    o.client_name = name;
    return connection::open(o);
  }

  collector& make_collector() { return collectors.emplace_back(); }

  static outbound_message message(const std::string& exchange, const std::string& key,
                                  const std::string& body) {
    outbound_message m;
    m.exchange = exchange;
    m.routing_key = key;
    m.body = body;
    return m;
  }

  publish_result send(const std::string& exchange, const std::string& key,
                      const std::string& body) {
    return ch->publish(message(exchange, key, body));
  }

  queue_row queue_stats(const std::string& name) {
    for (auto& q : conn->list_queues())
      if (q.name == name) return q;
    BOOST_FAIL("no queue " << name);
    return {};
  }

  // Polls until the broker reports `pred` of the queue (the broker settles asynchronously after
  // a client vanishes); fails after the guard time.
  template <class Pred>
  queue_row wait_queue(const std::string& name, Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
      auto q = queue_stats(name);
      if (pred(q)) return q;
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "queue " << name << " never reached the expected state");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Settle errors are reported by a later call that waits: calls `f` until it throws.
  error later_error(const std::function<void()>& f) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        f();
      } catch (const error& e) {
        return e;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    BOOST_FAIL("expected a broker error");
    return error("", "");
  }

  std::string expect_error(const std::function<void()>& f) {
    try {
      f();
    } catch (const error& e) {
      return e.code();
    }
    BOOST_FAIL("expected a broker error");
    return {};
  }
};

std::vector<std::string> bodies(const std::vector<delivery>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(d.body);
  return out;
}

using strings = std::vector<std::string>;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(declarations, fixture)

BOOST_AUTO_TEST_CASE(a_published_message_can_be_fetched) {
  ch->queue_declare("q");
  auto r = send("", "q", "hello");
  BOOST_TEST(to_string(r.outcome) == std::string("routed"));
  auto d = ch->get("q");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->body == "hello");
  BOOST_TEST(d->routing_key == "q");
  BOOST_TEST((d->id == r.id));
  BOOST_TEST(!d->redelivered);
  ch->ack(d->delivery_tag);
  BOOST_TEST(!ch->get("q").has_value());
}

BOOST_AUTO_TEST_CASE(an_empty_name_asks_for_a_server_generated_queue) {
  auto ok = ch->queue_declare("");
  BOOST_TEST(ok.name.rfind("amq.gen-", 0) == 0u);
  send("", ok.name, "x");
  BOOST_TEST(ch->queue_declare(ok.name).message_count == 1u);
}

BOOST_AUTO_TEST_CASE(redeclaring_with_other_properties_fails_and_closes_only_that_channel) {
  ch->queue_declare("q");
  ch->queue_declare("q");  // same properties: fine
  auto other = conn->open_channel();
  queue_options durable;
  durable.durable = true;
  BOOST_TEST(expect_error([&] { ch->queue_declare("q", durable); }) == "PRECONDITION_FAILED");
  BOOST_TEST(expect_error([&] { ch->queue_declare("q"); }) == "CHANNEL_ERROR");
  BOOST_TEST(other->queue_declare("q").name == "q");
  BOOST_TEST(expect_error([&] { other->exchange_declare("amq.direct", "fanout"); }) ==
             "PRECONDITION_FAILED");
}

BOOST_AUTO_TEST_CASE(passive_declares_of_missing_things_are_not_found) {
  queue_options passive;
  passive.passive = true;
  BOOST_TEST(expect_error([&] { ch->queue_declare("missing", passive); }) == "NOT_FOUND");
  auto ch2 = conn->open_channel();
  exchange_options xpassive;
  xpassive.passive = true;
  BOOST_TEST(expect_error([&] { ch2->exchange_declare("missing", "direct", xpassive); }) ==
             "NOT_FOUND");
}

BOOST_AUTO_TEST_CASE(reserved_and_invalid_names_are_refused_and_the_node_stays_up) {
  BOOST_TEST(expect_error([&] { ch->queue_declare("amq.mine"); }) == "ACCESS_REFUSED");
  auto c2 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c2->queue_declare(std::string("bad\nname")); }) ==
             "PRECONDITION_FAILED");
  auto c3 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c3->queue_declare(std::string(300, 'x')); }) ==
             "PRECONDITION_FAILED");
  auto c4 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c4->exchange_declare("e", "nonsense"); }) == "COMMAND_INVALID");
  auto c5 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c5->publish(message("", std::string(256, 'k'), "x")); }) ==
             "PRECONDITION_FAILED");
  auto c6 = conn->open_channel();
  queue_options bad_args;
  bad_args.arguments = {{"x-max-length", field_value::of_text("lots")}};
  BOOST_TEST(expect_error([&] { c6->queue_declare("q", bad_args); }) == "PRECONDITION_FAILED");
  BOOST_TEST(node.alive());
  BOOST_TEST(conn->open_channel()->queue_declare("fine").name == "fine");
}

BOOST_AUTO_TEST_CASE(the_default_exchange_cannot_be_bound_or_deleted) {
  ch->queue_declare("q");
  BOOST_TEST(expect_error([&] { ch->queue_bind("q", "", "k"); }) == "ACCESS_REFUSED");
  auto c2 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c2->exchange_delete(""); }) == "ACCESS_REFUSED");
  auto c3 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c3->exchange_delete("amq.topic"); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(delete_if_unused_and_if_empty_refuse_while_they_apply) {
  ch->queue_declare("q");
  send("", "q", "x");
  BOOST_TEST(expect_error([&] { ch->queue_delete("q", false, true); }) == "PRECONDITION_FAILED");
  auto c2 = conn->open_channel();
  auto& got = make_collector();
  c2->consume("q", {}, got.handler(), got.on_cancel());
  got.wait_for(1);
  auto c3 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c3->queue_delete("q", true, false); }) == "PRECONDITION_FAILED");
  auto c4 = conn->open_channel();
  c4->queue_delete("q");
  got.wait_for_cancel();
  BOOST_TEST(conn->list_queues().empty());
}

BOOST_AUTO_TEST_CASE(exchange_delete_if_unused_refuses_while_bound) {
  ch->exchange_declare("x", "fanout");
  ch->queue_declare("q");
  ch->queue_bind("q", "x", "");
  BOOST_TEST(expect_error([&] { ch->exchange_delete("x", true); }) == "PRECONDITION_FAILED");
  auto c2 = conn->open_channel();
  c2->exchange_delete("x");
  for (auto& b : conn->list_bindings()) BOOST_TEST(b.exchange != "x");
}

BOOST_AUTO_TEST_CASE(purge_drops_ready_messages_and_reports_how_many) {
  ch->queue_declare("q");
  for (int i = 0; i < 3; ++i) send("", "q", "m");
  BOOST_TEST(ch->queue_purge("q") == 3u);
  BOOST_TEST(queue_stats("q").messages_ready == 0u);
}

BOOST_AUTO_TEST_CASE(exclusive_queues_belong_to_their_connection) {
  queue_options excl;
  excl.exclusive = true;
  ch->queue_declare("mine", excl);
  {
    auto other = open();
    auto och = other->open_channel();
    BOOST_TEST(expect_error([&] { och->queue_declare("mine", excl); }) == "RESOURCE_LOCKED");
    auto och2 = other->open_channel();
    BOOST_TEST(expect_error([&] { och2->get("mine"); }) == "RESOURCE_LOCKED");
  }
  conn->close();
  auto fresh = open();
  auto fch = fresh->open_channel();
  queue_options passive;
  passive.passive = true;
  BOOST_TEST(expect_error([&] { fch->queue_declare("mine", passive); }) == "NOT_FOUND");
}

BOOST_AUTO_TEST_CASE(auto_delete_queues_go_with_their_last_consumer) {
  queue_options ad;
  ad.auto_delete = true;
  ch->queue_declare("temp", ad);
  auto& got = make_collector();
  auto tag = ch->consume("temp", {}, got.handler());
  BOOST_TEST(conn->list_queues().size() == 1u);
  ch->cancel(tag);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!conn->list_queues().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  BOOST_TEST(conn->list_queues().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(routing, fixture)

BOOST_AUTO_TEST_CASE(direct_exchanges_route_on_the_binding_key_until_unbound) {
  ch->exchange_declare("logs", "direct");
  ch->queue_declare("errors");
  ch->queue_bind("errors", "logs", "error");
  BOOST_TEST(to_string(send("logs", "error", "e1").outcome) == std::string("routed"));
  BOOST_TEST(to_string(send("logs", "info", "i1").outcome) == std::string("dropped"));
  ch->queue_unbind("errors", "logs", "error");
  BOOST_TEST(to_string(send("logs", "error", "e2").outcome) == std::string("dropped"));
  BOOST_TEST(queue_stats("errors").messages_ready == 1u);
}

BOOST_AUTO_TEST_CASE(fanout_reaches_every_bound_queue) {
  ch->exchange_declare("all", "fanout");
  for (auto q : {"a", "b", "c"}) {
    ch->queue_declare(q);
    ch->queue_bind(q, "all", "ignored");
  }
  send("all", "whatever", "hi");
  for (auto q : {"a", "b", "c"}) BOOST_TEST(queue_stats(q).messages_ready == 1u);
}

BOOST_AUTO_TEST_CASE(topic_exchanges_route_on_wildcards) {
  ch->exchange_declare("t", "topic");
  ch->queue_declare("eu");
  ch->queue_declare("all_errors");
  ch->queue_bind("eu", "t", "eu.#");
  ch->queue_bind("all_errors", "t", "*.error");
  send("t", "eu.error", "1");
  send("t", "eu.web.info", "2");
  send("t", "us.error", "3");
  BOOST_TEST(queue_stats("eu").messages_ready == 2u);
  BOOST_TEST(queue_stats("all_errors").messages_ready == 2u);
  auto c2 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c2->queue_bind("eu", "t", "eu*.x"); }) == "PRECONDITION_FAILED");
}

BOOST_AUTO_TEST_CASE(headers_exchanges_route_on_headers) {
  ch->exchange_declare("h", "headers");
  ch->queue_declare("pdf");
  ch->queue_bind(
      "pdf", "h", "",
      {{"x-match", field_value::of_text("all")}, {"format", field_value::of_text("pdf")}});
  auto m = message("h", "", "doc");
  m.properties.headers = {{"format", field_value::of_text("pdf")}};
  BOOST_TEST(to_string(ch->publish(m).outcome) == std::string("routed"));
  m.properties.headers = {{"format", field_value::of_text("txt")}};
  BOOST_TEST(to_string(ch->publish(m).outcome) == std::string("dropped"));
}

BOOST_AUTO_TEST_CASE(exchange_bindings_route_through_other_exchanges_each_queue_once) {
  ch->exchange_declare("src", "topic");
  ch->exchange_declare("mid", "fanout");
  ch->queue_declare("q");
  ch->exchange_bind("mid", "src", "a.*");
  ch->exchange_bind("src", "mid", "");  // a cycle: routing stops where it began
  ch->queue_bind("q", "mid", "");
  ch->queue_bind("q", "src", "a.b");  // and a second path to the same queue
  BOOST_TEST(to_string(send("src", "a.b", "1").outcome) == std::string("routed"));
  BOOST_TEST(to_string(send("src", "b.b", "2").outcome) == std::string("dropped"));
  BOOST_TEST(queue_stats("q").messages_ready == 1u);
  bool listed = false;
  for (const auto& b : conn->list_bindings())
    if (b.exchange == "src" && b.queue == "mid" && b.to_exchange) listed = true;
  BOOST_TEST(listed);
  ch->exchange_unbind("mid", "src", "a.*");
  ch->queue_unbind("q", "src", "a.b");
  BOOST_TEST(to_string(send("src", "a.b", "3").outcome) == std::string("dropped"));
  auto c2 = conn->open_channel();
  BOOST_TEST(expect_error([&] { c2->exchange_bind("nope", "src", ""); }) == "NOT_FOUND");
}

BOOST_AUTO_TEST_CASE(an_alternate_exchange_takes_what_its_exchange_cannot_route) {
  ch->exchange_declare("ae", "fanout");
  ch->queue_declare("unrouted");
  ch->queue_bind("unrouted", "ae", "");
  exchange_options o;
  o.arguments = {{"alternate-exchange", field_value::of_text("ae")}};
  ch->exchange_declare("main", "direct", o);
  BOOST_TEST(to_string(send("main", "nobody", "x").outcome) == std::string("routed"));
  BOOST_TEST(queue_stats("unrouted").messages_ready == 1u);
}

BOOST_AUTO_TEST_CASE(mandatory_unroutable_messages_are_returned) {
  auto m = message("amq.direct", "nobody", "x");
  m.mandatory = true;
  BOOST_TEST(to_string(ch->publish(m).outcome) == std::string("returned"));
}

BOOST_AUTO_TEST_CASE(publishing_to_a_missing_exchange_is_not_found) {
  BOOST_TEST(expect_error([&] { send("nope", "k", "x"); }) == "NOT_FOUND");
  BOOST_TEST(expect_error([&] { send("", "k", "x"); }) == "CHANNEL_ERROR");
}

BOOST_AUTO_TEST_CASE(internal_exchanges_refuse_direct_publishing) {
  exchange_options internal;
  internal.internal = true;
  ch->exchange_declare("inner", "fanout", internal);
  BOOST_TEST(expect_error([&] { send("inner", "", "x"); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(rejected_messages_reach_the_dead_letter_exchange) {
  ch->exchange_declare("dlx", "fanout");
  ch->queue_declare("dead");
  ch->queue_bind("dead", "dlx", "");
  queue_options o;
  o.arguments = {{"x-dead-letter-exchange", field_value::of_text("dlx")}};
  ch->queue_declare("work", o);
  send("", "work", "poison");
  auto d = ch->get("work");
  BOOST_REQUIRE(d.has_value());
  ch->reject(d->delivery_tag, false);
  auto q = wait_queue("dead", [](const queue_row& r) { return r.messages_ready == 1; });
  auto dead = ch->get("dead", true);
  BOOST_REQUIRE(dead.has_value());
  BOOST_TEST(dead->body == "poison");
}

BOOST_AUTO_TEST_CASE(a_large_batch_arrives_complete_and_in_order) {
  ch->queue_declare("q");
  ch->confirm_select();
  std::vector<outbound_message> batch;
  for (int i = 0; i < 20000; ++i) batch.push_back(message("", "q", std::to_string(i)));
  auto results = ch->publish_batch(std::move(batch)).get();
  BOOST_TEST(results.size() == 20000u);
  for (const auto& r : results) BOOST_TEST_REQUIRE(to_string(r.outcome) == std::string("routed"));
  auto& got = make_collector();
  consume_options o;
  o.no_ack = true;
  ch->consume("q", o, got.handler());
  auto all = got.wait_for(20000);
  for (int i = 0; i < 20000; ++i) BOOST_TEST_REQUIRE(all[i].body == std::to_string(i));
}

BOOST_AUTO_TEST_CASE(a_message_can_be_looked_up_by_id_while_held) {
  ch->queue_declare("q");
  auto r = send("", "q", "findme");
  auto found = ch->lookup(r.id);
  BOOST_REQUIRE(found.has_value());
  BOOST_TEST(found->queue == "q");
  BOOST_TEST(found->state == "ready");
  BOOST_TEST(found->message.body == "findme");
  auto d = ch->get("q");
  BOOST_TEST(ch->lookup(r.id)->state == "unacked");
  ch->ack(d->delivery_tag);
  ch->qos(0);  // waits, so the ack is processed before the next lookup
  BOOST_TEST(!ch->lookup(r.id).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(consuming, fixture)

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

BOOST_FIXTURE_TEST_SUITE(vhosts_and_connections, fixture)

BOOST_AUTO_TEST_CASE(vhosts_are_separate_namespaces) {
  conn->add_vhost("other");
  conn->add_vhost("other");  // idempotent
  auto names = conn->list_vhosts();
  BOOST_TEST((names == strings{"/", "other"}), boost::test_tools::per_element());
  auto oconn = open("other");
  auto och = oconn->open_channel();
  och->queue_declare("q");
  ch->queue_declare("q");
  och->publish(message("", "q", "in other"));
  BOOST_TEST(queue_stats("q").messages_ready == 0u);
  BOOST_TEST(och->get("q")->body == "in other");
}

BOOST_AUTO_TEST_CASE(deleting_a_vhost_closes_its_connections) {
  conn->add_vhost("doomed");
  auto dconn = open("doomed");
  auto dch = dconn->open_channel();
  dch->queue_declare("q");
  conn->delete_vhost("doomed");
  std::string code;
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (code.empty() && std::chrono::steady_clock::now() < deadline) {
    try {
      dch->queue_declare("q");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const error& e) {
      code = e.code();
    }
  }
  BOOST_TEST(code == "CONNECTION_FORCED");
  BOOST_TEST(expect_error([&] { open("doomed"); }) == "NOT_FOUND");
}

BOOST_AUTO_TEST_CASE(unknown_vhosts_and_bad_passwords_are_refused) {
  BOOST_TEST(expect_error([&] { open("nowhere"); }) == "NOT_FOUND");
  connect_options o;
  o.port = node.port();
  o.user = "guest";
  o.password = "wrong";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(an_empty_user_name_is_refused_whatever_the_password) {
  connect_options o;
  o.port = node.port();
  o.user = "";
  o.password = "anything";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
  o.password = "";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(guest_may_only_connect_from_a_loopback_address) {
  auto address = warren::test::non_loopback_address();
  if (address.empty()) {
    BOOST_TEST_MESSAGE("no non-loopback IPv4 address on this machine: nothing to try");
    return;
  }
  node_process wide({"--bind", "0.0.0.0"});
  connect_options o;
  o.host = address;
  o.port = wide.port();
  o.user = "guest";
  o.password = "guest";
  BOOST_TEST(expect_error([&] { connection::open(o); }) == "ACCESS_REFUSED");
  o.host = "127.0.0.1";
  BOOST_CHECK_NO_THROW(connection::open(o));
}

BOOST_AUTO_TEST_CASE(connections_are_listed_with_name_and_peer) {
  auto rows = conn->list_connections();
  BOOST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0].name == "test");
  BOOST_TEST(rows[0].peer.rfind("127.0.0.1:", 0) == 0u);
  BOOST_TEST(rows[0].channels == 1u);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_reports_disconnected_to_clients) {
  ch->queue_declare("q");
  node.stop();
  BOOST_TEST(expect_error([&] { ch->queue_declare("q"); }) == "DISCONNECTED");
}

BOOST_AUTO_TEST_CASE(sigterm_stops_the_node_cleanly) {
  auto status = node.stop();
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(node.log().find("stopping on SIGTERM") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(node)

BOOST_AUTO_TEST_CASE(garbage_on_the_rpc_port_drops_only_that_connection) {
  node_process node;
  connect_options o;
  o.port = node.port();
  auto good = connection::open(o);
  auto ch = good->open_channel();
  ch->queue_declare("kept");
  ch->publish({"", "kept", "safe", {}, false});
  // Random bytes, a truncated frame header and an absurd segment count and size.
  std::vector<std::string> payloads{std::string("\x00\x00\x00\x00\xff\xff\xff\x7f", 8),
                                    std::string("\xff\xff\xff\xff", 4), std::string(1, '\x01')};
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919) % 256);
  payloads.push_back(noise);
  for (const auto& p : payloads) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(node.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    BOOST_REQUIRE(write(fd, p.data(), p.size()) == static_cast<ssize_t>(p.size()));
    shutdown(fd, SHUT_WR);
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
  }
  BOOST_TEST(node.alive());
  BOOST_TEST(ch->get("kept")->body == "safe");
}

BOOST_AUTO_TEST_CASE(stats_interval_logs_active_queues) {
  node_process node({"--stats-interval", "1"});
  connect_options o;
  o.port = node.port();
  auto conn = connection::open(o);
  auto ch = conn->open_channel();
  ch->queue_declare("busy");
  ch->publish({"", "busy", "x", {}, false});
  // A summary line, then a table row for the queue: vhost, name, ready, unacked, consumers.
  const std::regex row(R"(stats:\s+/\s+busy\s+1\s+0\s+0\s)");
  const std::regex summary(R"(stats: 1 queues, 1 connections, 1 ready, 0 unacked; enqueued)");
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!std::regex_search(node.log(), row) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(std::regex_search(node.log(), row));
  BOOST_TEST(std::regex_search(node.log(), summary));
}

BOOST_AUTO_TEST_CASE(a_taken_port_is_a_clear_error) {
  node_process first;
  warren::test::temp_dir other_dir;
  auto r = warren::test::run_command(
      {WARREN_NODE_PATH, "--port", std::to_string(first.port()), "--data-dir", other_dir.path()});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())) !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_flags_are_usage_errors) {
  auto r = warren::test::run_command({WARREN_NODE_PATH, "--log-level", "loud"});
  BOOST_TEST(r.exit_code == 2);
  r = warren::test::run_command({WARREN_NODE_PATH, "--port", "70000"});
  BOOST_TEST(r.exit_code == 2);
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
