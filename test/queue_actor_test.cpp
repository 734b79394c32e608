// The queue actor as a specification: a real actor system, a real queue actor, and scoped actors
// standing in for the connection and the vhost, so each test sees exactly what the queue sends.
#include <boost/test/unit_test.hpp>

#include "actors/common/broker_error.hpp"
#include "actors/queue/queue_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

using namespace warren;

namespace {

// Only a guard against a hung test, never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

struct delivered {
  std::string tag;
  bool no_ack;
  std::vector<queued_delivery> items;
};

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  caf::scoped_actor conn{system};
  caf::scoped_actor vhost{system};

  queue_actor_type make_queue(field_table args = {}, std::string name = "q") {
    queue_spec spec{name, false, false, false, args, {}};
    queue_limits limits;
    BOOST_REQUIRE(parse_queue_arguments(args, limits).empty());
    return system.spawn(queue_actor, "/", spec, limits, caf::actor{vhost}, uint64_t{1},
                        storage_context{});  // no data dir: in memory
  }

  static message_ptr msg(const std::string& body) {
    auto m = std::make_shared<message>();
    m->id = next_message_id();
    m->body = body;
    return m;
  }

  void enqueue(const queue_actor_type& q, std::vector<std::string> bodies, uint64_t first_seq = 0) {
    publish_batch batch{caf::actor{conn}, 1, {}};
    uint64_t seq = first_seq;
    for (auto& b : bodies) batch.items.push_back({msg(b), first_seq ? seq++ : 0});
    conn->send(q, enqueue_atom::value, std::move(batch));
  }

  void subscribe(const queue_actor_type& q, const std::string& tag, uint32_t credit,
                 bool no_ack = false, bool exclusive = false) {
    consumer_spec spec{caf::actor{conn}, "test", 1, tag, no_ack, exclusive, credit, credit};
    conn->request(q, caf::infinite, consume_atom::value, spec)
        .receive([] {}, [](caf::error& e) { BOOST_FAIL(to_string(describe(e))); });
  }

  delivered next_delivery() {
    delivered out;
    conn->receive(
        [&](deliver_atom, uint16_t, const std::string& tag, bool no_ack,
            const std::vector<queued_delivery>& items) {
          out = {tag, no_ack, items};
        },
        caf::after(patience) >> [] { BOOST_FAIL("no delivery arrived"); });
    return out;
  }

  queue_info stats(const queue_actor_type& q) {
    queue_info info;
    conn->request(q, caf::infinite, stats_atom::value)
        .receive([&](queue_info& i) { info = i; }, [](caf::error&) { BOOST_FAIL("stats failed"); });
    return info;
  }

  std::vector<std::string> bodies(const delivered& d) {
    std::vector<std::string> out;
    for (const auto& i : d.items) out.push_back(i.msg->body);
    return out;
  }
};

using strings = std::vector<std::string>;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(queue, fixture)

BOOST_AUTO_TEST_CASE(consumers_are_served_round_robin) {
  auto q = make_queue();
  subscribe(q, "a", 100);
  subscribe(q, "b", 100);
  enqueue(q, {"1", "2", "3", "4"});
  auto first = next_delivery(), second = next_delivery();
  BOOST_TEST(first.tag == "a");
  BOOST_TEST(bodies(first) == (strings{"1", "3"}), boost::test_tools::per_element());
  BOOST_TEST(second.tag == "b");
  BOOST_TEST(bodies(second) == (strings{"2", "4"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_consumer_gets_no_more_than_its_credit) {
  auto q = make_queue();
  subscribe(q, "a", 2);
  enqueue(q, {"1", "2", "3", "4", "5"});
  BOOST_TEST(bodies(next_delivery()) == (strings{"1", "2"}), boost::test_tools::per_element());
  auto s = stats(q);
  BOOST_TEST(s.ready == 3u);
  BOOST_TEST(s.unacked == 2u);
  conn->send(q, credit_atom::value, caf::actor{conn}, uint16_t{1}, std::string("a"), uint32_t{1});
  BOOST_TEST(bodies(next_delivery()) == (strings{"3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(consumers_without_credit_are_skipped) {
  auto q = make_queue();
  subscribe(q, "slow", 1);
  subscribe(q, "fast", 10);
  enqueue(q, {"1", "2", "3", "4"});
  std::map<std::string, strings> got;
  for (int i = 0; i < 2; ++i) {
    auto d = next_delivery();
    got[d.tag] = bodies(d);
  }
  BOOST_TEST(got["slow"] == (strings{"1"}), boost::test_tools::per_element());
  BOOST_TEST(got["fast"] == (strings{"2", "3", "4"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(acked_messages_are_gone) {
  auto q = make_queue();
  subscribe(q, "a", 10);
  enqueue(q, {"1", "2"});
  auto d = next_delivery();
  std::vector<uint64_t> ids{d.items[0].delivery_id, d.items[1].delivery_id};
  conn->send(q, settle_atom::value, caf::actor{conn}, ids, settle_kind::ack);
  auto s = stats(q);
  BOOST_TEST(s.ready == 0u);
  BOOST_TEST(s.unacked == 0u);
}

BOOST_AUTO_TEST_CASE(requeued_messages_return_to_the_head_marked_redelivered) {
  auto q = make_queue();
  enqueue(q, {"1", "2", "3"});
  get_reply first, second;
  conn->request(q, caf::infinite, get_atom::value, caf::actor{conn}, uint16_t{1}, false)
      .receive([&](get_reply& r) { first = r; }, [](caf::error&) { BOOST_FAIL("get failed"); });
  conn->request(q, caf::infinite, get_atom::value, caf::actor{conn}, uint16_t{1}, false)
      .receive([&](get_reply& r) { second = r; }, [](caf::error&) { BOOST_FAIL("get failed"); });
  BOOST_TEST(first.delivery.msg->body == "1");
  BOOST_TEST(!first.delivery.redelivered);
  BOOST_TEST(second.remaining == 1u);
  std::vector<uint64_t> ids{second.delivery.delivery_id, first.delivery.delivery_id};
  conn->send(q, settle_atom::value, caf::actor{conn}, ids, settle_kind::requeue);
  subscribe(q, "a", 10);
  auto d = next_delivery();
  BOOST_TEST(bodies(d) == (strings{"1", "2", "3"}), boost::test_tools::per_element());
  BOOST_TEST(d.items[0].redelivered);
  BOOST_TEST(d.items[1].redelivered);
  BOOST_TEST(!d.items[2].redelivered);
}

BOOST_AUTO_TEST_CASE(a_late_ack_for_an_earlier_hand_out_settles_nothing) {
  auto q = make_queue();
  subscribe(q, "a", 10);
  enqueue(q, {"1"});
  auto first = next_delivery();
  auto old_id = first.items[0].delivery_id;
  conn->send(q, settle_atom::value, caf::actor{conn}, std::vector<uint64_t>{old_id},
             settle_kind::requeue);
  auto again = next_delivery();
  BOOST_TEST(again.items[0].redelivered);
  conn->send(q, settle_atom::value, caf::actor{conn}, std::vector<uint64_t>{old_id},
             settle_kind::ack);
  BOOST_TEST(stats(q).unacked == 1u);
}

BOOST_AUTO_TEST_CASE(a_connection_that_dies_gets_its_unacked_messages_requeued) {
  auto q = make_queue();
  {
    caf::scoped_actor doomed{system};
    consumer_spec spec{caf::actor{doomed}, "doomed", 1, "d", false, false, 10, 10};
    doomed->request(q, caf::infinite, consume_atom::value, spec).receive([] {}, [](caf::error&) {});
    enqueue(q, {"1", "2"});
    doomed->receive(
        [](deliver_atom, uint16_t, const std::string&, bool,
           const std::vector<queued_delivery>& items) { BOOST_TEST(items.size() == 2u); });
  }  // the scoped actor terminates here; the queue sees it go down
  subscribe(q, "survivor", 10);
  auto d = next_delivery();
  BOOST_TEST(bodies(d) == (strings{"1", "2"}), boost::test_tools::per_element());
  BOOST_TEST(d.items[0].redelivered);
}

BOOST_AUTO_TEST_CASE(closing_a_channel_requeues_what_it_held_and_drops_its_consumers) {
  auto q = make_queue();
  subscribe(q, "a", 10);
  enqueue(q, {"1"});
  next_delivery();
  conn->send(q, close_atom::value, caf::actor{conn}, uint16_t{1});
  auto s = stats(q);
  BOOST_TEST(s.consumers == 0u);
  BOOST_TEST(s.ready == 1u);
  BOOST_TEST(s.unacked == 0u);
}

BOOST_AUTO_TEST_CASE(cancel_requeues_that_consumers_messages) {
  auto q = make_queue();
  subscribe(q, "a", 10);
  enqueue(q, {"1"});
  next_delivery();
  conn->send(q, cancel_atom::value, caf::actor{conn}, uint16_t{1}, std::string("a"), true);
  auto s = stats(q);
  BOOST_TEST(s.consumers == 0u);
  BOOST_TEST(s.ready == 1u);
}

BOOST_AUTO_TEST_CASE(no_ack_deliveries_are_not_held) {
  auto q = make_queue();
  subscribe(q, "a", 10, true);
  enqueue(q, {"1", "2"});
  auto d = next_delivery();
  BOOST_TEST(d.no_ack);
  BOOST_TEST(stats(q).unacked == 0u);
}

BOOST_AUTO_TEST_CASE(confirms_go_to_the_publisher) {
  auto q = make_queue();
  enqueue(q, {"1", "2"}, 41);
  conn->receive(
      [](confirm_atom, uint16_t channel, const std::vector<uint64_t>& acked,
         const std::vector<uint64_t>& nacked) {
        BOOST_TEST(channel == 1u);
        BOOST_TEST(acked == (std::vector<uint64_t>{41, 42}), boost::test_tools::per_element());
        BOOST_TEST(nacked.empty());
      },
      caf::after(patience) >> [] { BOOST_FAIL("no confirm"); });
}

BOOST_AUTO_TEST_CASE(max_length_reject_publish_nacks_the_overflow) {
  auto q = make_queue({{"x-max-length", field_value::of_int(2)},
                       {"x-overflow", field_value::of_text("reject-publish")}});
  enqueue(q, {"1", "2", "3"}, 1);
  conn->receive(
      [](confirm_atom, uint16_t, const std::vector<uint64_t>& acked,
         const std::vector<uint64_t>& nacked) {
        BOOST_TEST(acked == (std::vector<uint64_t>{1, 2}), boost::test_tools::per_element());
        BOOST_TEST(nacked == (std::vector<uint64_t>{3}), boost::test_tools::per_element());
      },
      caf::after(patience) >> [] { BOOST_FAIL("no confirm"); });
  BOOST_TEST(stats(q).ready == 2u);
}

BOOST_AUTO_TEST_CASE(max_length_drop_head_keeps_the_newest) {
  auto q = make_queue({{"x-max-length", field_value::of_int(2)}});
  enqueue(q, {"1", "2", "3"});
  subscribe(q, "a", 10);
  BOOST_TEST(bodies(next_delivery()) == (strings{"2", "3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rejected_messages_are_dead_lettered) {
  auto q = make_queue({{"x-dead-letter-exchange", field_value::of_text("dlx")},
                       {"x-dead-letter-routing-key", field_value::of_text("dead")}});
  subscribe(q, "a", 10);
  enqueue(q, {"bad"});
  auto d = next_delivery();
  conn->send(q, settle_atom::value, caf::actor{conn}, std::vector<uint64_t>{d.items[0].delivery_id},
             settle_kind::reject);
  vhost->receive(
      [](dead_atom, const std::string& exchange, const std::vector<message_ptr>& msgs) {
        BOOST_TEST(exchange == "dlx");
        BOOST_REQUIRE(msgs.size() == 1u);
        BOOST_TEST(msgs[0]->routing_key == "dead");
        BOOST_TEST(msgs[0]->body == "bad");
        const auto* reason = find_field(msgs[0]->properties().headers, "x-first-death-reason");
        BOOST_REQUIRE(reason != nullptr);
        BOOST_TEST(reason->s == "rejected");
      },
      caf::after(patience) >> [] { BOOST_FAIL("nothing was dead-lettered"); });
}

BOOST_AUTO_TEST_CASE(expired_messages_are_dead_lettered_without_a_consumer) {
  auto q = make_queue({{"x-message-ttl", field_value::of_int(1)},
                       {"x-dead-letter-exchange", field_value::of_text("dlx")}});
  enqueue(q, {"old"});
  vhost->receive(
      [](dead_atom, const std::string&, const std::vector<message_ptr>& msgs) {
        BOOST_REQUIRE(msgs.size() == 1u);
        BOOST_TEST(find_field(msgs[0]->properties().headers, "x-first-death-reason")->s ==
                   "expired");
      },
      caf::after(patience) >> [] { BOOST_FAIL("the message did not expire"); });
  BOOST_TEST(stats(q).ready == 0u);
}

BOOST_AUTO_TEST_CASE(an_exclusive_consumer_keeps_others_out) {
  auto q = make_queue();
  subscribe(q, "only", 10, false, true);
  consumer_spec spec{caf::actor{conn}, "test", 1, "other", false, false, 10, 10};
  conn->request(q, caf::infinite, consume_atom::value, spec)
      .receive([] { BOOST_FAIL("a second consumer was accepted"); },
               [](caf::error& e) { BOOST_TEST((describe(e).code == reply_code::access_refused)); });
}

BOOST_AUTO_TEST_CASE(delete_if_empty_and_if_unused_refuse_while_they_apply) {
  auto q = make_queue();
  enqueue(q, {"1"});
  conn->request(q, caf::infinite, delete_atom::value, false, true, false)
      .receive(
          [](uint32_t) { BOOST_FAIL("deleted a non-empty queue"); },
          [](caf::error& e) { BOOST_TEST((describe(e).code == reply_code::precondition_failed)); });
  subscribe(q, "a", 10);
  next_delivery();
  conn->request(q, caf::infinite, delete_atom::value, true, false, false)
      .receive(
          [](uint32_t) { BOOST_FAIL("deleted a queue in use"); },
          [](caf::error& e) { BOOST_TEST((describe(e).code == reply_code::precondition_failed)); });
  conn->request(q, caf::infinite, delete_atom::value, false, false, false)
      .receive([](uint32_t n) { BOOST_TEST(n == 0u); },
               [](caf::error&) { BOOST_FAIL("delete failed"); });
  conn->receive(
      [](cancelled_atom, uint16_t, const std::string& tag, const std::string& reason) {
        BOOST_TEST(tag == "a");
        BOOST_TEST(reason.find("deleted") != std::string::npos);
      },
      caf::after(patience) >> [] { BOOST_FAIL("the consumer was not told"); });
}

BOOST_AUTO_TEST_CASE(purge_drops_ready_but_not_unacked) {
  auto q = make_queue();
  subscribe(q, "a", 1);
  enqueue(q, {"1", "2", "3"});
  next_delivery();
  uint32_t purged = 0;
  conn->request(q, caf::infinite, purge_atom::value)
      .receive([&](uint32_t n) { purged = n; }, [](caf::error&) { BOOST_FAIL("purge failed"); });
  BOOST_TEST(purged == 2u);
  BOOST_TEST(stats(q).unacked == 1u);
}

BOOST_AUTO_TEST_CASE(lookup_finds_ready_and_unacked_messages) {
  auto q = make_queue();
  auto m = msg("findme");
  conn->send(q, enqueue_atom::value, publish_batch{caf::actor{conn}, 1, {{m, 0}}});
  lookup_reply r;
  conn->request(q, caf::infinite, lookup_atom::value, m->id)
      .receive([&](lookup_reply& x) { r = x; }, [](caf::error&) { BOOST_FAIL("lookup failed"); });
  BOOST_TEST(r.found);
  BOOST_TEST(r.state == "ready");
  subscribe(q, "a", 10);
  next_delivery();
  conn->request(q, caf::infinite, lookup_atom::value, m->id)
      .receive([&](lookup_reply& x) { r = x; }, [](caf::error&) { BOOST_FAIL("lookup failed"); });
  BOOST_TEST(r.state == "unacked");
  conn->request(q, caf::infinite, lookup_atom::value, next_message_id())
      .receive([&](lookup_reply& x) { r = x; }, [](caf::error&) { BOOST_FAIL("lookup failed"); });
  BOOST_TEST(!r.found);
}

BOOST_AUTO_TEST_SUITE_END()
