// stream_group's bookkeeping: a shared cursor, redeliveries first, and the frontier a commit
// stores (never past an offset still in flight or waiting).
#include <boost/test/unit_test.hpp>

#include "actors/stream/stream_group.hpp"

using warren::stream_group;

namespace {

// Hands out the next offset below `end`; its offset, or -1 when there is none.
int64_t take(stream_group& g, uint64_t end) {
  uint64_t offset = 0;
  bool again = false;
  if (!g.next(end, offset, again)) return -1;
  g.handed_out(offset, again);
  return static_cast<int64_t>(offset);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_new_group_resumes_at_next_and_a_committed_one_after_its_offset) {
  BOOST_TEST(stream_group().resume_at(17) == 17u);
  BOOST_TEST(stream_group(4).resume_at(17) == 5u);
}

BOOST_AUTO_TEST_CASE(offsets_go_out_once_in_order_up_to_the_end) {
  stream_group g;
  g.position(3);
  BOOST_TEST(take(g, 5) == 3);
  BOOST_TEST(take(g, 5) == 4);
  BOOST_TEST(take(g, 5) == -1);
  BOOST_TEST(g.done_through() == 2);  // 3 and 4 are in flight
}

BOOST_AUTO_TEST_CASE(the_frontier_waits_for_the_oldest_unacked_offset) {
  stream_group g;
  g.position(0);
  for (int i = 0; i < 4; ++i) take(g, 10);
  BOOST_TEST(g.settled(1));
  BOOST_TEST(g.settled(2));
  BOOST_TEST(g.done_through() == -1);  // 0 is still out
  BOOST_TEST(g.settled(0));
  BOOST_TEST(g.done_through() == 2);
  BOOST_TEST(!g.settled(0));  // twice: not in flight any more
}

BOOST_AUTO_TEST_CASE(what_comes_back_goes_out_again_first_and_holds_the_frontier) {
  stream_group g;
  g.position(0);
  for (int i = 0; i < 3; ++i) take(g, 10);
  g.give_back(1);
  BOOST_TEST(g.settled(0));
  BOOST_TEST(g.settled(2));
  BOOST_TEST(g.done_through() == 0);  // 1 waits for redelivery
  uint64_t offset = 0;
  bool again = false;
  BOOST_REQUIRE(g.next(10, offset, again));
  BOOST_TEST(offset == 1u);
  BOOST_TEST(again);
  g.handed_out(offset, again);
  BOOST_TEST(take(g, 10) == 3);  // then the cursor goes on where it was
  BOOST_TEST(g.settled(1));
  BOOST_TEST(g.done_through() == 2);
}

BOOST_AUTO_TEST_CASE(retention_moves_the_cursor_and_drops_what_waited_below_the_head) {
  stream_group g;
  g.position(0);
  for (int i = 0; i < 3; ++i) take(g, 10);
  g.give_back(0);
  g.skip_to(5);
  BOOST_TEST(g.cursor() == 5u);
  BOOST_TEST(g.settled(1));
  BOOST_TEST(g.settled(2));
  BOOST_TEST(take(g, 10) == 5);
}
