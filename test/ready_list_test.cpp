// ready_list: a queue's ready messages by priority then arrival, with their byte total.
#include <boost/test/unit_test.hpp>

#include "actors/queue/ready_list.hpp"

#include <memory>
#include <string>

using warren::message;
using warren::ready_list;

namespace {

ready_list::entry entry(uint64_t seq, uint8_t priority, std::string body = "x",
                        int64_t expires_at = 0) {
  auto m = std::make_shared<message>();
  m->body = std::move(body);
  auto props = m->properties();
  props.priority = priority;
  m->set_properties(std::move(props));
  return {m, seq, false, expires_at};
}

std::vector<uint64_t> drain(ready_list& l) {
  std::vector<uint64_t> out;
  while (!l.empty()) out.push_back(l.take_front().seq);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(without_priorities_it_is_one_fifo) {
  ready_list l;
  for (uint64_t s = 1; s <= 3; ++s) l.push_back(entry(s, static_cast<uint8_t>(9 - s)));
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(higher_priorities_go_first_fifo_within_one_capped_at_the_maximum) {
  ready_list l(5);
  l.push_back(entry(1, 1));
  l.push_back(entry(2, 0));
  l.push_back(entry(3, 5));
  l.push_back(entry(4, 200));  // counts as 5
  l.push_back(entry(5, 1));
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{3, 4, 1, 5, 2}));
}

BOOST_AUTO_TEST_CASE(requeued_messages_go_ahead_of_their_priority) {
  ready_list l(3);
  l.push_back(entry(3, 1));
  l.push_back(entry(4, 3));
  // Requeued in descending seq, as the queue actor does.
  l.put_back(entry(2, 1));
  l.put_back(entry(1, 3));
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{1, 4, 2, 3}));
}

// Settled one at a time, in the order they were handed out, they still come back in arrival
// order: RabbitMQ puts a requeued message back where it was.
BOOST_AUTO_TEST_CASE(messages_requeued_one_by_one_go_back_to_their_places) {
  ready_list l(2);
  l.push_back(entry(4, 0));
  l.push_back(entry(5, 2));
  l.put_back(entry(1, 0));
  l.put_back(entry(3, 0));
  l.put_back(entry(2, 0));
  l.put_back(entry(0, 2));
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{0, 5, 1, 2, 3, 4}));
}

// Two consumers that got every other message leave one after the other: the second batch
// interleaves with the first, and both go back in arrival order ahead of what was never handed out.
BOOST_AUTO_TEST_CASE(interleaved_batches_merge_in_arrival_order) {
  ready_list l;
  l.push_back(entry(7, 0));
  l.push_back(entry(8, 0));
  std::vector<ready_list::entry> first, second;
  for (uint64_t s : {5, 1, 3}) first.push_back(entry(s, 0));
  for (uint64_t s : {2, 6, 4}) second.push_back(entry(s, 0));
  l.put_back(std::move(first));
  l.put_back(std::move(second));
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

BOOST_AUTO_TEST_CASE(bytes_follow_every_change) {
  ready_list l(2);
  l.push_back(entry(1, 0, "abcd"));
  l.push_back(entry(2, 2, "ef"));
  BOOST_TEST(l.bytes() == 6u);
  l.take_front();
  BOOST_TEST(l.bytes() == 4u);
  l.remove_if([](const auto& e) { return e.seq == 1; });
  BOOST_TEST(l.bytes() == 0u);
  BOOST_TEST(l.empty());
  l.put_back(entry(3, 1, "xyz"));
  l.clear();
  BOOST_TEST(l.bytes() == 0u);
  BOOST_TEST(l.size() == 0u);
}

BOOST_AUTO_TEST_CASE(expiry_applies_at_the_head_of_each_level) {
  ready_list l(1);
  l.push_back(entry(1, 0, "a", 100));
  l.push_back(entry(2, 1, "b", 0));
  l.push_back(entry(3, 1, "c", 50));  // behind one that never expires
  BOOST_TEST(l.next_expiry() == 100);
  std::vector<ready_list::entry> gone;
  l.take_expired(150, gone);
  BOOST_TEST(gone.size() == 1u);
  BOOST_TEST(uint64_t{gone[0].seq} == 1u);
  BOOST_TEST(drain(l) == (std::vector<uint64_t>{2, 3}));
}
