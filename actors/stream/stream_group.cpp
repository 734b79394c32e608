#include "actors/stream/stream_group.hpp"

#include <algorithm>

namespace warren {

void stream_group::position(uint64_t offset) {
  cursor_ = offset;
  redeliver_.clear();
}

void stream_group::skip_to(uint64_t first) {
  cursor_ = std::max(cursor_, first);
  redeliver_.erase(redeliver_.begin(), redeliver_.lower_bound(first));
}

bool stream_group::next(uint64_t end, uint64_t& offset, bool& redelivered) const {
  if (!redeliver_.empty() && *redeliver_.begin() < end) {
    offset = *redeliver_.begin();
    redelivered = true;
    return true;
  }
  if (cursor_ >= end) return false;
  offset = cursor_;
  redelivered = false;
  return true;
}

void stream_group::handed_out(uint64_t offset, bool redelivered) {
  if (redelivered)
    redeliver_.erase(offset);
  else
    cursor_ = offset + 1;
  in_flight_.insert(offset);
}

bool stream_group::settled(uint64_t offset) {
  return in_flight_.erase(offset) != 0;
}

void stream_group::give_back(uint64_t offset) {
  if (in_flight_.erase(offset) != 0) redeliver_.insert(offset);
}

int64_t stream_group::done_through() const {
  uint64_t frontier = cursor_;
  if (!in_flight_.empty()) frontier = std::min(frontier, *in_flight_.begin());
  if (!redeliver_.empty()) frontier = std::min(frontier, *redeliver_.begin());
  return static_cast<int64_t>(frontier) - 1;
}

}  // namespace warren
