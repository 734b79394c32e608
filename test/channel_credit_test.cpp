// channel_credit: prefetch limits per consumer and per channel (basic.qos global), as credit.
#include <boost/test/unit_test.hpp>

#include "actors/connection/channel_credit.hpp"

using warren::channel_credit;

namespace {

uint32_t granted(const channel_credit::grants& g, const std::string& tag) {
  uint32_t n = 0;
  for (const auto& [t, k] : g)
    if (t == tag) n += k;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_consumer_limit_alone_gives_credit_straight_back) {
  channel_credit c;
  BOOST_TEST(c.add("a", 3) == 3u);
  c.delivered("a", 3);
  auto g = c.settled("a", 2);
  BOOST_TEST(granted(g, "a") == 2u);
}

BOOST_AUTO_TEST_CASE(a_global_limit_bounds_all_consumers_of_the_channel_together) {
  channel_credit c;
  c.set_global(2);
  BOOST_TEST(c.limited(false, 0));
  uint32_t a = c.add("a", 0), b = c.add("b", 0);
  BOOST_TEST(a + b == 2u);  // not 2 + 2
  c.delivered("a", a);
  c.delivered("b", b);
  // Nothing more until something is settled.
  BOOST_TEST(c.settled("nobody", 0).empty());
  auto g = c.settled("a", a);
  BOOST_TEST(granted(g, "a") + granted(g, "b") == a);
}

BOOST_AUTO_TEST_CASE(freed_global_credit_is_shared_not_kept_by_one_consumer) {
  channel_credit c;
  c.set_global(4);
  uint32_t a = c.add("a", 0);
  BOOST_TEST(a == 4u);  // alone, it may have it all
  c.delivered("a", 4);
  BOOST_TEST(c.add("b", 0) == 0u);  // nothing free yet
  auto g = c.settled("a", 4);
  BOOST_TEST(granted(g, "a") == 2u);  // each gets its share of the four
  BOOST_TEST(granted(g, "b") == 2u);
}

BOOST_AUTO_TEST_CASE(both_limits_apply_when_both_are_set) {
  channel_credit c;
  c.set_global(10);
  BOOST_TEST(c.add("a", 2) == 2u);  // its own limit is the smaller
  c.set_global(1);
  BOOST_TEST(c.add("b", 5) == 0u);  // the channel is over its new limit
  c.delivered("a", 2);
  auto g = c.settled("a", 2);
  BOOST_TEST(granted(g, "a") + granted(g, "b") == 1u);  // the new limit holds from now on
  BOOST_TEST(granted(g, "a") <= 2u);
}

BOOST_AUTO_TEST_CASE(a_consumer_that_goes_frees_its_credit_for_the_others) {
  channel_credit c;
  c.set_global(2);
  BOOST_TEST(c.add("a", 0) == 2u);
  BOOST_TEST(c.add("b", 0) == 0u);
  auto g = c.remove("a");
  BOOST_TEST(granted(g, "b") == 2u);
}

BOOST_AUTO_TEST_CASE(no_ack_consumers_and_unlimited_channels_are_not_tracked) {
  channel_credit c;
  BOOST_TEST(!c.limited(true, 10));
  BOOST_TEST(!c.limited(false, 0));
  c.set_global(5);
  BOOST_TEST(!c.limited(true, 0));
}
