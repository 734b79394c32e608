// pending_acks on its own: hand-out ids, settling only by the holder, taking out what a closed
// connection or channel held, cancelled consumers, and lookup by message id.
#include <boost/test/unit_test.hpp>

#include "actors/queue/pending_acks.hpp"

#include <algorithm>
#include <string>

using namespace warren;
using acks = pending_acks<std::string>;

namespace {

message_ptr msg() {
  auto m = std::make_shared<message>();
  m->id = next_message_id();
  return m;
}

// Hands out `n` messages to `conn` on `channel` for consumer `consumer`; returns their ids.
std::vector<uint64_t> hand_out(acks& a, int n, const std::string& conn, uint16_t channel,
                               uint64_t consumer) {
  std::vector<uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    auto id = a.next_id();
    a.hold(id, {msg(), id * 10, 0, conn, consumer, channel});
    ids.push_back(id);
  }
  return ids;
}

std::vector<uint64_t> seqs(const std::vector<acks::entry>& es) {
  std::vector<uint64_t> out;
  for (const auto& e : es) out.push_back(e.seq);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(only_the_holder_settles_and_only_once) {
  acks a;
  auto ids = hand_out(a, 2, "c1", 1, 7);
  BOOST_TEST(ids[1] == ids[0] + 1);
  BOOST_TEST(!a.take(ids[0], "c2"));  // another connection
  auto e = a.take(ids[0], "c1");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->seq == ids[0] * 10);
  BOOST_TEST(!a.take(ids[0], "c1"));  // already settled
  BOOST_TEST(a.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_closed_channel_gives_back_only_what_it_held) {
  acks a;
  hand_out(a, 2, "c1", 1, 1);
  auto on2 = hand_out(a, 2, "c1", 2, 2);
  hand_out(a, 1, "c2", 2, 3);
  auto back =
      a.take_all_if([](const std::string& conn, uint16_t ch) { return conn == "c1" && ch == 2; });
  BOOST_TEST(seqs(back) == (std::vector<uint64_t>{on2[0] * 10, on2[1] * 10}),
             boost::test_tools::per_element());
  BOOST_TEST(a.size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_cancelled_consumer_gives_back_or_leaves_its_messages) {
  acks a;
  auto mine = hand_out(a, 2, "c1", 1, 5);
  hand_out(a, 1, "c1", 1, 6);
  auto back = a.consumer_left(5, true);
  BOOST_TEST(back.size() == 2u);
  BOOST_TEST(a.size() == 1u);

  acks kept;
  auto ids = hand_out(kept, 2, "c1", 1, 5);
  BOOST_TEST(kept.consumer_left(5, false).empty());
  BOOST_TEST(kept.size() == 2u);
  BOOST_TEST(kept.take(ids[0], "c1")->consumer == 0u);  // settled like a get now
}

BOOST_AUTO_TEST_CASE(a_held_message_is_found_by_its_id) {
  acks a;
  auto ids = hand_out(a, 3, "c1", 1, 1);
  auto held = a.take(ids[1], "c1");
  a.hold(ids[1], *held);
  auto found = a.find_message(held->msg->id);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->first == ids[1]);
  BOOST_TEST(!a.find_message(next_message_id()));
}
