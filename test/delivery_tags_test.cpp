// delivery_tags on its own: tags in order, settling one, many, each, cancelled consumers, the
// oldest delivery, and grouping for the queues.
#include <boost/test/unit_test.hpp>

#include "actors/connection/delivery_tags.hpp"

using namespace warren;
using tags_t = delivery_tags<std::string>;

namespace {

// Holds deliveries 1..n from queue "q<i % 2>", consumer "c" (every third is a get).
tags_t holding(int n) {
  tags_t t;
  for (int i = 1; i <= n; ++i) {
    auto tag = t.next();
    t.hold(tag, {"q" + std::to_string(i % 2), uint64_t(100 + i), i % 3 == 0 ? "" : "c",
                 int64_t(1000 + i)});
  }
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tags_count_up_from_one_acked_or_not) {
  tags_t t;
  BOOST_TEST(t.next() == 1u);
  BOOST_TEST(t.next() == 2u);  // a no-ack delivery takes a tag without being held
  t.hold(t.next(), {"q", 7, "c", 0});
  BOOST_TEST(t.size() == 1u);
  BOOST_TEST(t.newest() == 3u);
}

BOOST_AUTO_TEST_CASE(take_one_or_everything_up_to_a_tag) {
  auto t = holding(5);
  auto one = t.take(2, false);
  BOOST_REQUIRE(one);
  BOOST_TEST(one->at(0).delivery_id == 102u);
  BOOST_TEST(!t.take(2, false));  // settled already
  auto upto = t.take(4, true);
  BOOST_REQUIRE(upto);
  BOOST_TEST(upto->size() == 3u);  // 1, 3, 4
  BOOST_TEST(!t.take(4, true));    // nothing left up to 4
  auto all = t.take(0, true);      // multiple with tag 0: everything
  BOOST_REQUIRE(all);
  BOOST_TEST(all->size() == 1u);
  BOOST_TEST(t.empty());
}

BOOST_AUTO_TEST_CASE(take_each_stops_at_the_first_unknown_tag) {
  auto t = holding(4);
  auto [taken, unknown] = t.take_each({1, 3, 3, 4});
  BOOST_TEST(taken.size() == 2u);
  BOOST_REQUIRE(unknown);
  BOOST_TEST(*unknown == 3u);
  BOOST_TEST(t.size() == 2u);  // 2 and 4 are still held
}

BOOST_AUTO_TEST_CASE(a_cancelled_consumer_voids_or_keeps_its_deliveries) {
  auto requeued = holding(6);
  requeued.forget_consumer("c", true);
  BOOST_TEST(requeued.size() == 2u);  // the gets (3 and 6) stay
  auto kept = holding(6);
  kept.forget_consumer("c", false);
  BOOST_TEST(kept.size() == 6u);
  auto taken = kept.take(0, true);
  BOOST_TEST(tags_t::group(*taken).by_consumer.empty());  // no credit goes back for them
}

BOOST_AUTO_TEST_CASE(the_oldest_delivery_is_the_first_held) {
  auto t = holding(3);
  BOOST_TEST(*t.oldest_ms() == 1001);
  t.take(1, false);
  BOOST_TEST(*t.oldest_ms() == 1002);
  t.take(0, true);
  BOOST_TEST(!t.oldest_ms());
}

BOOST_AUTO_TEST_CASE(settling_groups_by_queue_and_consumer) {
  auto t = holding(4);
  auto g = tags_t::group(*t.take(0, true));
  BOOST_TEST((g.by_queue["q0"] == std::vector<uint64_t>{102, 104}));
  BOOST_TEST((g.by_queue["q1"] == std::vector<uint64_t>{101, 103}));
  BOOST_TEST(g.by_consumer["c"] == 3u);  // 3 was a get
}
