// register_history: is a recorded history of reads and writes of one register linearizable?
// The checker of the Jepsen-style tests (issue 33): clients on different members write and read
// one value (a vhost's max-queues limit), recording when each operation started and ended and
// how it ended, and this decides whether some order of the operations, each taking effect at one
// instant between its start and its end, explains every read.
//
// The search is Wing and Gong's, with Lowe's memo of (operations taken, value) already tried, as
// in Porcupine. It is iterative, with its own stack, and stops after a budget of steps.
//
// Outcomes: an operation answered `ok` took effect; one answered `failed` (refused) did not, so a
// refused write that a read sees makes the history not linearizable. An `unknown` write (a
// timeout, a lost leader) may have taken effect at any time after its start, or never; an
// `unknown` read says nothing and is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warren::test {

struct register_op {
  enum class kind { read, write };
  enum class outcome { ok, failed, unknown };
  kind what = kind::read;
  int64_t value = 0;    // written, or returned by the read
  int64_t started = 0;  // any clock shared by all clients
  int64_t ended = 0;    // ignored for unknown outcomes
  outcome result = outcome::ok;
  std::string client;  // who did it, for the explanation
};

struct register_verdict {
  enum class kind { linearizable, not_linearizable, undecided };
  kind what = kind::undecided;
  std::string explanation;  // for a failure: the operations that no order could explain
};

/// Checks `history` against a register that starts at `initial`.
register_verdict check_register(const std::vector<register_op>& history, int64_t initial,
                                uint64_t step_budget = 20'000'000);

}  // namespace warren::test
