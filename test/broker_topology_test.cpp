// The broker end to end, its topology: declaring and deleting queues and exchanges (names,
// properties, exclusivity, auto-delete) and routing through them (direct, fanout, topic,
// headers, exchange bindings, alternate and dead-letter exchanges). A real warren-node on a free
// port, driven through the client library over loopback TCP; each case states one behaviour.
// Consuming (broker_consuming_test) and vhosts, connections and the node process
// (broker_node_test) have suites of their own; the three share broker_fixture.hpp.
#include <boost/test/unit_test.hpp>

#include "broker_fixture.hpp"

#include <chrono>
#include <thread>

using namespace warren::test::broker;

BOOST_FIXTURE_TEST_SUITE(declarations, broker_fixture)

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

BOOST_FIXTURE_TEST_SUITE(routing, broker_fixture)

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
