#include "register_history.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <unordered_set>

namespace warren::test {

namespace {

// One call or return in the history, on a doubly linked list that the search lifts entries out
// of and puts back. Index 0 is the list's head.
struct event {
  bool call = false;
  size_t op = 0;
  size_t match = 0;  // the other event of the same operation
  size_t prev = 0, next = 0;
};

constexpr size_t none = std::numeric_limits<size_t>::max();

struct memo_key {
  std::vector<uint64_t> taken;  // a bit per operation already linearized
  int64_t value;
  bool operator==(const memo_key& o) const { return value == o.value && taken == o.taken; }
};

struct memo_hash {
  size_t operator()(const memo_key& k) const {
    size_t h = std::hash<int64_t>()(k.value);
    for (uint64_t w : k.taken) h = h * 1099511628211ull ^ std::hash<uint64_t>()(w);
    return h;
  }
};

std::string describe(const register_op& op) {
  std::string out = op.client.empty() ? "" : op.client + " ";
  out += op.what == register_op::kind::write ? "write " : "read ";
  out += std::to_string(op.value) + " [" + std::to_string(op.started) + ", ";
  out += op.result == register_op::outcome::unknown ? "?" : std::to_string(op.ended);
  return out + "]";
}

// The operations that can have taken effect: failed ones did not, unknown reads tell nothing,
// and an unknown write may land at any time after its start (its end is "never").
std::vector<register_op> effective(const std::vector<register_op>& history) {
  std::vector<register_op> out;
  for (auto op : history) {
    if (op.result == register_op::outcome::failed) continue;
    if (op.result == register_op::outcome::unknown) {
      if (op.what == register_op::kind::read) continue;
      op.ended = std::numeric_limits<int64_t>::max();
    }
    out.push_back(op);
  }
  return out;
}

// Calls and returns in time order, linked; a call before a return at the same instant, so
// that touching operations count as concurrent.
std::vector<event> link_events(const std::vector<register_op>& ops) {
  struct stamp {
    int64_t time;
    bool call;
    size_t op;
  };
  std::vector<stamp> order;
  for (size_t i = 0; i < ops.size(); ++i) {
    order.push_back({ops[i].started, true, i});
    order.push_back({std::max(ops[i].ended, ops[i].started), false, i});
  }
  std::stable_sort(order.begin(), order.end(), [](const stamp& a, const stamp& b) {
    return a.time != b.time ? a.time < b.time : a.call && !b.call;
  });
  std::vector<event> events(order.size() + 1);
  std::vector<size_t> call_of(ops.size()), return_of(ops.size());
  for (size_t i = 0; i < order.size(); ++i) {
    auto& e = events[i + 1];
    e.call = order[i].call;
    e.op = order[i].op;
    e.prev = i;
    e.next = i + 2 < events.size() ? i + 2 : none;
    (e.call ? call_of : return_of)[e.op] = i + 1;
  }
  events[0].next = events.size() > 1 ? 1 : none;
  for (size_t i = 1; i < events.size(); ++i)
    events[i].match = events[i].call ? return_of[events[i].op] : call_of[events[i].op];
  return events;
}

void unlink(std::vector<event>& events, size_t i) {
  events[events[i].prev].next = events[i].next;
  if (events[i].next != none) events[events[i].next].prev = events[i].prev;
}

void relink(std::vector<event>& events, size_t i) {
  events[events[i].prev].next = i;
  if (events[i].next != none) events[events[i].next].prev = i;
}

}  // namespace

register_verdict check_register(const std::vector<register_op>& history, int64_t initial,
                                uint64_t step_budget) {
  auto ops = effective(history);
  auto events = link_events(ops);
  std::vector<uint64_t> taken((ops.size() + 63) / 64, 0);
  std::unordered_set<memo_key, memo_hash> tried;
  struct choice {
    size_t call;
    int64_t value_before;
  };
  std::vector<choice> stack;
  int64_t value = initial;
  size_t best = 0, stuck_at = none;
  size_t at = events[0].next;
  for (uint64_t steps = 0; events[0].next != none; ++steps) {
    if (steps >= step_budget)
      return {register_verdict::kind::undecided,
              "gave up after " + std::to_string(step_budget) + " steps"};
    const auto& e = events[at];
    if (e.call) {
      const auto& op = ops[e.op];
      bool fits = op.what == register_op::kind::write || op.value == value;
      if (fits) {
        int64_t next_value = op.what == register_op::kind::write ? op.value : value;
        auto key = memo_key{taken, next_value};
        key.taken[e.op / 64] |= 1ull << (e.op % 64);
        if (tried.insert(key).second) {
          stack.push_back({at, value});
          taken = std::move(key.taken);
          value = next_value;
          unlink(events, e.match);
          unlink(events, at);
          at = events[0].next;
          continue;
        }
      }
      at = e.next;
      continue;
    }
    // A return whose call could not be placed before it: undo the last choice.
    if (stack.size() >= best) {
      best = stack.size();
      stuck_at = e.op;
    }
    if (stack.empty()) break;
    auto last = stack.back();
    stack.pop_back();
    value = last.value_before;
    size_t op = events[last.call].op;
    taken[op / 64] &= ~(1ull << (op % 64));
    relink(events, last.call);
    relink(events, events[last.call].match);
    at = events[last.call].next;
  }
  if (events[0].next == none) return {register_verdict::kind::linearizable, ""};
  std::string why = "no order of the " + std::to_string(ops.size()) +
                    " operations that took effect explains the reads; at best " +
                    std::to_string(best) + " were placed before ";
  why += stuck_at != none ? describe(ops[stuck_at]) : std::string("the first");
  return {register_verdict::kind::not_linearizable, why};
}

}  // namespace warren::test
