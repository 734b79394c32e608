// publish_confirms on its own: outcomes from exchange counts and queue confirms arriving in any
// order, calls answered once and in completion order, abandoned calls named once.
#include <boost/test/unit_test.hpp>

#include "actors/connection/publish_confirms.hpp"

#include <algorithm>

using namespace warren;
using outcomes = std::vector<publish_outcome>;

BOOST_AUTO_TEST_CASE(a_call_is_answered_once_every_message_has_an_outcome) {
  publish_confirms pc;
  auto call = pc.start(7, 3);
  auto a = pc.add(call, 0, false);
  auto b = pc.add(call, 1, true);
  auto c = pc.add(call, 2, false);
  BOOST_TEST(b == a + 1);
  pc.routed(a, 2);
  pc.routed(b, 0);  // mandatory, unroutable
  pc.routed(c, 0);  // not mandatory, unroutable
  pc.acked(a);
  BOOST_TEST(pc.take_answers().empty());  // a waits for its second queue
  pc.acked(a);
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_TEST(answers[0].request == 7u);
  BOOST_TEST((answers[0].outcomes == outcomes{publish_outcome::routed, publish_outcome::returned,
                                              publish_outcome::dropped}));
  BOOST_TEST(pc.waiting() == 0u);
  BOOST_TEST(pc.take_answers().empty());
}

BOOST_AUTO_TEST_CASE(confirms_before_the_exchange_count_wait_for_it) {
  publish_confirms pc;
  auto seq = pc.add(pc.start(1, 1), 0, false);
  pc.acked(seq);  // a fast queue confirms before the exchange reports
  BOOST_TEST(pc.take_answers().empty());
  pc.routed(seq, 1);
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_TEST((answers[0].outcomes == outcomes{publish_outcome::routed}));
}

BOOST_AUTO_TEST_CASE(one_refusal_among_the_queues_rejects_the_message) {
  publish_confirms pc;
  auto seq = pc.add(pc.start(1, 1), 0, false);
  pc.routed(seq, 3);
  pc.acked(seq);
  pc.nacked(seq);
  pc.acked(seq);
  BOOST_TEST((pc.take_answers().at(0).outcomes == outcomes{publish_outcome::rejected}));
}

BOOST_AUTO_TEST_CASE(a_failed_route_rejects_and_late_confirms_are_ignored) {
  publish_confirms pc;
  auto seq = pc.add(pc.start(4, 1), 0, true);
  pc.route_failed(seq);
  pc.acked(seq);  // too late: the call is answered
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);
  BOOST_TEST((answers[0].outcomes == outcomes{publish_outcome::rejected}));
  BOOST_TEST(pc.take_answers().empty());
}

BOOST_AUTO_TEST_CASE(calls_are_answered_in_the_order_they_complete) {
  publish_confirms pc;
  auto first = pc.add(pc.start(10, 1), 0, false);
  auto second = pc.add(pc.start(11, 1), 0, false);
  pc.routed(second, 0);
  pc.routed(first, 0);
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  BOOST_TEST(answers[0].request == 11u);
  BOOST_TEST(answers[1].request == 10u);
}

BOOST_AUTO_TEST_CASE(abandon_names_each_waiting_call_once_and_forgets_it) {
  publish_confirms pc;
  auto big = pc.start(20, 2);
  auto s1 = pc.add(big, 0, false);
  pc.add(big, 1, false);
  pc.add(pc.start(21, 1), 0, false);
  auto done = pc.add(pc.start(22, 1), 0, false);
  pc.routed(done, 0);
  auto requests = pc.abandon();
  std::sort(requests.begin(), requests.end());
  BOOST_TEST((requests == std::vector<uint64_t>{20, 21}));
  BOOST_TEST(pc.waiting() == 0u);
  pc.routed(s1, 0);  // an exchange answering after the close changes nothing
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 1u);  // only the call that completed before
  BOOST_TEST(answers[0].request == 22u);
}

BOOST_AUTO_TEST_CASE(a_member_going_down_refuses_every_waiting_message_and_nothing_else) {
  publish_confirms pc;
  auto done = pc.start(1, 1);
  auto done_seq = pc.add(done, 0, false);
  pc.routed(done_seq, 1);
  pc.acked(done_seq);  // answered before: stays routed
  auto c = pc.start(2, 3);
  auto a = pc.add(c, 0, false);
  auto b = pc.add(c, 1, false);
  auto d = pc.add(c, 2, false);
  pc.routed(a, 2);
  pc.acked(a);  // one of its two queues has it: not enough
  pc.routed(b, 1);
  // d: the exchange has not answered yet
  pc.refuse_waiting();
  auto answers = pc.take_answers();
  BOOST_REQUIRE_EQUAL(answers.size(), 2u);
  BOOST_CHECK_EQUAL(answers[0].request, 1u);
  BOOST_CHECK(answers[0].outcomes[0] == publish_outcome::routed);
  BOOST_CHECK_EQUAL(answers[1].request, 2u);
  for (auto o : answers[1].outcomes) BOOST_CHECK(o == publish_outcome::rejected);
  BOOST_CHECK_EQUAL(pc.waiting(), 0u);
  pc.acked(b);  // late reports change nothing
  pc.routed(d, 1);
  BOOST_CHECK(pc.take_answers().empty());
}
