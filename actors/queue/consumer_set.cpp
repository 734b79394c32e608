#include "actors/queue/consumer_set.hpp"

#include <algorithm>

namespace warren {

uint64_t consumer_set::add(consumer_spec spec) {
  auto at = std::find_if(consumers_.begin(), consumers_.end(),
                         [&](const auto& c) { return c.spec.priority < spec.priority; });
  auto credit = spec.initial_credit;
  auto key = ++next_key_;
  consumers_.insert(at, {key, std::move(spec), credit, 0});
  return key;
}

consumer_set::consumer* consumer_set::find(uint64_t key) {
  for (auto& c : consumers_)
    if (c.key == key) return &c;
  return nullptr;
}

consumer_set::consumer* consumer_set::find(const caf::actor& conn, uint16_t channel,
                                           const std::string& tag) {
  for (auto& c : consumers_)
    if (c.spec.connection == conn && c.spec.channel == channel && c.spec.tag == tag) return &c;
  return nullptr;
}

std::optional<uint64_t> consumer_set::remove(const caf::actor& conn, uint16_t channel,
                                             const std::string& tag) {
  auto* c = find(conn, channel, tag);
  if (c == nullptr) return std::nullopt;
  auto key = c->key;
  consumers_.erase(consumers_.begin() + (c - consumers_.data()));
  return key;
}

size_t consumer_set::remove_all(const caf::actor_addr& conn, std::optional<uint16_t> channel) {
  auto before = consumers_.size();
  consumers_.erase(std::remove_if(consumers_.begin(), consumers_.end(),
                                  [&](const auto& c) {
                                    return c.spec.connection.address() == conn &&
                                           (!channel || *channel == c.spec.channel);
                                  }),
                   consumers_.end());
  return before - consumers_.size();
}

consumer_set::consumer* consumer_set::pick(bool single_active) {
  const size_t n = consumers_.size();
  if (single_active) return n > 0 && consumers_[0].credit > 0 ? &consumers_[0] : nullptr;
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && consumers_[end].spec.priority == consumers_[begin].spec.priority) ++end;
    const size_t group = end - begin;
    for (size_t k = 0; k < group; ++k) {
      size_t idx = begin + (round_robin_ + k) % group;
      if (consumers_[idx].credit == 0) continue;
      round_robin_ += k + 1;
      return &consumers_[idx];
    }
    begin = end;
  }
  return nullptr;
}

bool consumer_set::any_exclusive() const {
  return std::any_of(consumers_.begin(), consumers_.end(),
                     [](const auto& c) { return c.spec.exclusive; });
}

}  // namespace warren
