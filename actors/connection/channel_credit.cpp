#include "actors/connection/channel_credit.hpp"

#include <algorithm>
#include <limits>

namespace warren {

namespace {
constexpr uint64_t unbounded = std::numeric_limits<uint64_t>::max();
}

uint64_t channel_credit::out() const {
  uint64_t total = 0;
  for (const auto& [tag, c] : consumers_) total += uint64_t{c.credit} + c.unacked;
  return total;
}

uint64_t channel_credit::pool_free() const {
  if (global_ == 0) return unbounded;
  auto used = out();
  return used >= global_ ? 0 : global_ - used;
}

uint64_t channel_credit::headroom(const consumer& c) const {
  if (c.prefetch == 0) return unbounded;
  uint64_t used = uint64_t{c.credit} + c.unacked;
  return used >= c.prefetch ? 0 : c.prefetch - used;
}

// Under a global limit no consumer holds more than its share of credit, so that one consumer of
// an idle queue cannot soak up what a busy one needs, and a busy one cannot starve the rest.
uint64_t channel_credit::fair_room(const consumer& c) const {
  if (global_ == 0) return unbounded;
  uint64_t n = consumers_.size();
  uint64_t fair = std::max<uint64_t>(1, (global_ + n - 1) / n);
  return c.credit >= fair ? 0 : fair - c.credit;
}

// Gives the consumer up to `wanted` credit, as far as the limits allow; returns what it got.
uint32_t channel_credit::give(consumer& c, uint64_t wanted) {
  auto n = std::min({wanted, headroom(c), pool_free(), fair_room(c)});
  n = std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max() - c.credit);
  c.credit += static_cast<uint32_t>(n);
  return static_cast<uint32_t>(n);
}

// Hands what the global limit allows to consumers with room, one unit at a time in turn, so that
// freed credit is shared rather than taken by the first consumer.
channel_credit::grants channel_credit::rebalance() {
  grants out;
  if (global_ == 0 || consumers_.empty()) return out;
  std::map<std::string, uint32_t> given;
  for (bool progress = true; progress && pool_free() > 0;) {
    progress = false;
    auto start = consumers_.lower_bound(next_turn_);
    for (size_t seen = 0; seen < consumers_.size() && pool_free() > 0; ++seen) {
      if (start == consumers_.end()) start = consumers_.begin();
      if (give(start->second, 1) == 1) {
        ++given[start->first];
        progress = true;
      }
      ++start;
      next_turn_ = start == consumers_.end() ? std::string() : start->first;
    }
  }
  for (auto& [tag, n] : given) out.emplace_back(tag, n);
  return out;
}

channel_credit::grants channel_credit::set_global(uint32_t limit) {
  global_ = limit;
  return rebalance();
}

uint32_t channel_credit::add(const std::string& tag, uint32_t prefetch) {
  auto& c = consumers_[tag];
  c = consumer{prefetch, 0, 0};
  return give(c, unbounded);
}

channel_credit::grants channel_credit::remove(const std::string& tag) {
  consumers_.erase(tag);
  return rebalance();
}

void channel_credit::delivered(const std::string& tag, uint32_t n) {
  auto i = consumers_.find(tag);
  if (i == consumers_.end()) return;
  auto& c = i->second;
  c.credit -= std::min(c.credit, n);
  c.unacked += n;
}

channel_credit::grants channel_credit::settled(const std::string& tag, uint32_t n) {
  grants out;
  auto i = consumers_.find(tag);
  if (i == consumers_.end()) return rebalance();
  auto& c = i->second;
  c.unacked -= std::min(c.unacked, n);
  if (global_ == 0) {
    // A limit of its own alone: the credit comes straight back.
    if (auto back = give(c, n); back > 0) out.emplace_back(tag, back);
    return out;
  }
  next_turn_ = tag;  // the consumer that settled has the first turn
  return rebalance();
}

}  // namespace warren
