// consumer_set on its own: who gets the next message by priority, credit and turn, single
// active consumers, and finding and removing consumers.
#include <boost/test/unit_test.hpp>

#include "actors/queue/consumer_set.hpp"

using namespace warren;

namespace {

consumer_spec spec(const std::string& tag, uint32_t credit, int32_t priority = 0,
                   uint16_t channel = 1) {
  consumer_spec s;
  s.tag = tag;
  s.channel = channel;
  s.initial_credit = credit;
  s.priority = priority;
  return s;
}

// The tags of the next `n` picks (consuming one credit each, as a delivery does).
std::string picks(consumer_set& set, int n, bool single_active = false) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    auto* c = set.pick(single_active);
    if (c == nullptr) {
      out += '-';
      continue;
    }
    --c->credit;
    out += c->spec.tag;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(equals_take_turns_while_they_have_credit) {
  consumer_set set;
  set.add(spec("a", 2));
  set.add(spec("b", 1));
  set.add(spec("c", 3));
  BOOST_TEST(picks(set, 7) == "abcacc-");
}

BOOST_AUTO_TEST_CASE(higher_priorities_are_served_first_and_lower_ones_when_they_are_full) {
  consumer_set set;
  set.add(spec("l", 5, 0));
  set.add(spec("H", 2, 10));
  set.add(spec("h", 1, 10));
  BOOST_TEST(picks(set, 5) == "HhHll");
  BOOST_TEST(set.all().front().spec.tag == "H");  // sorted by priority, newcomers behind equals
}

BOOST_AUTO_TEST_CASE(single_active_serves_only_the_first_until_it_goes) {
  consumer_set set;
  set.add(spec("first", 1));
  set.add(spec("second", 5));
  BOOST_TEST(picks(set, 2, true) == "first-");  // no credit: nobody else gets it
  BOOST_TEST(set.remove({}, 1, "first").has_value());
  BOOST_TEST(picks(set, 1, true) == "second");
}

BOOST_AUTO_TEST_CASE(a_consumer_that_gets_nothing_keeps_its_turn) {
  consumer_set set;
  set.add(spec("a", 5));
  set.add(spec("b", 5));
  BOOST_TEST(set.pick(false)->spec.tag == "a");
  set.give_turn_back();  // that message had expired
  BOOST_TEST(picks(set, 3) == "aba");
}

BOOST_AUTO_TEST_CASE(consumers_are_found_and_removed_by_channel_and_tag) {
  consumer_set set;
  auto k1 = set.add(spec("a", 1, 0, 1));
  auto k2 = set.add(spec("a", 1, 0, 2));
  set.add(spec("b", 1, 0, 2));
  BOOST_TEST(k1 != k2);
  BOOST_TEST(set.find({}, 2, "a")->key == k2);
  BOOST_TEST(set.find(k1)->spec.channel == 1);
  BOOST_TEST(!set.remove({}, 3, "a"));
  BOOST_TEST(set.remove_all(caf::actor_addr{}, uint16_t{2}) == 2u);  // channel 2's consumers
  BOOST_TEST(set.size() == 1u);
  BOOST_TEST(set.remove_all(caf::actor_addr{}, std::nullopt) == 1u);
  BOOST_TEST(set.empty());
}

BOOST_AUTO_TEST_CASE(exclusivity_is_seen) {
  consumer_set set;
  auto s = spec("x", 1);
  s.exclusive = true;
  BOOST_TEST(!set.any_exclusive());
  set.add(s);
  BOOST_TEST(set.any_exclusive());
}
