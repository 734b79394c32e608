#include "actors/queue/ready_list.hpp"

#include <algorithm>
#include <iterator>

namespace warren {

size_t ready_list::level_of(const message& m) const {
  return std::min<size_t>(m.properties().priority, levels_.size() - 1);
}

size_t ready_list::top() const {
  size_t i = levels_.size() - 1;
  while (i > 0 && levels_[i].empty()) --i;
  return i;
}

void ready_list::forget(const entry& e) {
  --size_;
  bytes_ -= e.msg->body.size();
  heap_bytes_ -= e.msg->heap_bytes();
}

ready_list::entry ready_list::take_front() {
  auto& level = levels_[top()];
  auto e = std::move(level.front());
  level.pop_front();
  forget(e);
  return e;
}

void ready_list::push_back(entry e) {
  ++size_;
  bytes_ += e.msg->body.size();
  heap_bytes_ += e.msg->heap_bytes();
  levels_[level_of(*e.msg)].push_back(std::move(e));
}

void ready_list::put_back(entry e) {
  std::vector<entry> one;
  one.push_back(std::move(e));
  put_back(std::move(one));
}

void ready_list::put_back(std::vector<entry> entries) {
  std::vector<std::vector<entry>> by_level(levels_.size());
  for (auto& e : entries) {
    ++size_;
    bytes_ += e.msg->body.size();
    heap_bytes_ += e.msg->heap_bytes();
    by_level[level_of(*e.msg)].push_back(std::move(e));
  }
  auto by_seq = [](const entry& a, const entry& b) { return a.seq < b.seq; };
  for (size_t l = 0; l < levels_.size(); ++l) {
    auto& batch = by_level[l];
    if (batch.empty()) continue;
    std::sort(batch.begin(), batch.end(), by_seq);
    auto& level = levels_[l];
    uint64_t last = batch.back().seq;
    auto reach = std::upper_bound(level.begin(), level.end(), last,
                                  [](uint64_t s, const entry& x) { return s < x.seq; });
    std::vector<entry> merged;
    merged.reserve(static_cast<size_t>(reach - level.begin()) + batch.size());
    std::merge(std::make_move_iterator(level.begin()), std::make_move_iterator(reach),
               std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()),
               std::back_inserter(merged), by_seq);
    level.erase(level.begin(), reach);
    level.insert(level.begin(), std::make_move_iterator(merged.begin()),
                 std::make_move_iterator(merged.end()));
  }
}

void ready_list::take_expired(int64_t now, std::vector<entry>& out) {
  for (auto& level : levels_) {
    while (!level.empty() && level.front().expires_at != 0 && level.front().expires_at < now) {
      forget(level.front());
      out.push_back(std::move(level.front()));
      level.pop_front();
    }
  }
}

int64_t ready_list::next_expiry() const {
  int64_t next = 0;
  for (const auto& level : levels_) {
    if (level.empty() || level.front().expires_at == 0) continue;
    next = next == 0 ? level.front().expires_at : std::min(next, level.front().expires_at);
  }
  return next;
}

void ready_list::clear() {
  for (auto& level : levels_) level.clear();
  size_ = 0;
  bytes_ = 0;
  heap_bytes_ = 0;
}

}  // namespace warren
