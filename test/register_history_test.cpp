// The register checker of the Jepsen-style tests (test/register_history.hpp), on histories whose
// answer is known: the classic cases by hand, and long ones recorded from a simulated register
// that is atomic by construction, then damaged.
#include <boost/test/unit_test.hpp>

#include "register_history.hpp"

#include <random>

using warren::test::check_register;
using warren::test::register_op;
using warren::test::register_verdict;

namespace {

using kind = register_op::kind;
using outcome = register_op::outcome;

register_op w(int64_t v, int64_t start, int64_t end, outcome o = outcome::ok) {
  return {kind::write, v, start, end, o, ""};
}
register_op r(int64_t v, int64_t start, int64_t end, outcome o = outcome::ok) {
  return {kind::read, v, start, end, o, ""};
}

bool linearizable(const std::vector<register_op>& h) {
  auto v = check_register(h, 0);
  BOOST_TEST((v.what != register_verdict::kind::undecided));
  return v.what == register_verdict::kind::linearizable;
}

// Clients take turns at random on one atomic register; each operation's effect happens at one
// instant inside a random interval around it, so the history is linearizable by construction.
std::vector<register_op> simulated(unsigned seed, size_t count) {
  std::mt19937 rng(seed);
  std::vector<register_op> out;
  int64_t value = 0, clock = 0;
  for (size_t i = 0; i < count; ++i) {
    clock += 1 + rng() % 5;
    int64_t effect = clock;
    int64_t start = effect - static_cast<int64_t>(rng() % 20);
    int64_t end = effect + static_cast<int64_t>(rng() % 20);
    if (rng() % 2 == 0) {
      value = static_cast<int64_t>(i) + 1;
      out.push_back(w(value, start, end));
    } else {
      out.push_back(r(value, start, end));
    }
    out.back().client = "c" + std::to_string(rng() % 5);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(register_history_suite)

BOOST_AUTO_TEST_CASE(a_sequential_history_is_linearizable) {
  BOOST_TEST(linearizable({w(1, 0, 1), r(1, 2, 3), w(2, 4, 5), r(2, 6, 7)}));
  BOOST_TEST(linearizable({}));
  BOOST_TEST(linearizable({r(0, 0, 1)}));
}

BOOST_AUTO_TEST_CASE(a_read_during_a_write_may_see_either_value) {
  BOOST_TEST(linearizable({w(1, 0, 10), r(0, 1, 2), r(1, 3, 4)}));
  BOOST_TEST(linearizable({w(1, 0, 10), r(1, 1, 2), r(1, 3, 4)}));
}

BOOST_AUTO_TEST_CASE(a_stale_read_after_a_write_ended_is_not_linearizable) {
  BOOST_TEST(!linearizable({w(1, 0, 1), r(0, 2, 3)}));
  // Once a read saw the new value, a later read cannot see the old one.
  BOOST_TEST(!linearizable({w(1, 0, 10), r(1, 1, 2), r(0, 3, 4)}));
}

BOOST_AUTO_TEST_CASE(two_concurrent_writes_are_seen_in_one_order_only) {
  BOOST_TEST(linearizable({w(1, 0, 10), w(2, 0, 10), r(2, 11, 12), r(2, 13, 14)}));
  BOOST_TEST(!linearizable({w(1, 0, 10), w(2, 0, 10), r(2, 11, 12), r(1, 13, 14)}));
}

BOOST_AUTO_TEST_CASE(a_refused_write_that_a_read_sees_is_not_linearizable) {
  BOOST_TEST(!linearizable({w(5, 0, 1, outcome::failed), r(5, 2, 3)}));
  BOOST_TEST(linearizable({w(5, 0, 1, outcome::failed), r(0, 2, 3)}));
}

BOOST_AUTO_TEST_CASE(a_write_of_unknown_outcome_may_land_late_or_never) {
  BOOST_TEST(linearizable({w(5, 0, 0, outcome::unknown), r(0, 2, 3), r(5, 100, 101)}));
  BOOST_TEST(linearizable({w(5, 0, 0, outcome::unknown), r(0, 2, 3), r(0, 100, 101)}));
  BOOST_TEST(!linearizable({w(5, 10, 0, outcome::unknown), r(5, 2, 3)}));  // seen before it began
  BOOST_TEST(!linearizable({w(5, 0, 0, outcome::unknown), r(5, 2, 3), r(0, 4, 5)}));
  // A read without an answer tells nothing.
  BOOST_TEST(linearizable({w(1, 0, 1), r(7, 2, 3, outcome::unknown)}));
}

BOOST_AUTO_TEST_CASE(long_histories_of_an_atomic_register_pass_and_fail_once_damaged) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    auto history = simulated(seed, 400);
    BOOST_TEST(linearizable(history), "seed " << seed);
    // A read of a value nobody wrote.
    for (auto& op : history)
      if (op.what == kind::read) {
        op.value = -1;
        break;
      }
    auto verdict = check_register(history, 0);
    BOOST_TEST((verdict.what == register_verdict::kind::not_linearizable), "seed " << seed);
    BOOST_TEST(verdict.explanation.find("read -1") != std::string::npos, verdict.explanation);
  }
}

BOOST_AUTO_TEST_CASE(a_search_beyond_its_budget_is_undecided_not_passed) {
  auto verdict = check_register(simulated(3, 400), 0, 10);
  BOOST_TEST((verdict.what == register_verdict::kind::undecided));
}

BOOST_AUTO_TEST_SUITE_END()
