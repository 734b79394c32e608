#include "actors/connection/publish_confirms.hpp"
#include "core/clock.hpp"

#include <chrono>

#include <algorithm>
#include <utility>

namespace warren {

publish_confirms::call_ref publish_confirms::start(uint64_t request, size_t count) {
  return std::make_shared<call>(request, count, steady_ns());
}

uint64_t publish_confirms::add(const call_ref& c, size_t index, bool mandatory) {
  auto seq = ++next_seq_;
  pending_.emplace(seq, pending{c, index, -1, 0, 0, mandatory});
  return seq;
}

void publish_confirms::routed(uint64_t seq, uint32_t queues) {
  auto p = pending_.find(seq);
  if (p == pending_.end()) return;
  p->second.routed_to = queues;
  finish_if_known(seq);
}

void publish_confirms::route_failed(uint64_t seq) {
  auto p = pending_.find(seq);
  if (p == pending_.end()) return;
  p->second.routed_to = 1;
  p->second.nacked = 1;
  finish_if_known(seq);
}

void publish_confirms::acked(uint64_t seq) {
  auto p = pending_.find(seq);
  if (p == pending_.end()) return;
  ++p->second.acked;
  finish_if_known(seq);
}

void publish_confirms::nacked(uint64_t seq) {
  auto p = pending_.find(seq);
  if (p == pending_.end()) return;
  ++p->second.nacked;
  finish_if_known(seq);
}

void publish_confirms::finish_if_known(uint64_t seq) {
  auto i = pending_.find(seq);
  auto& p = i->second;
  // Queues may confirm before the exchange's count arrives: wait for both.
  if (p.routed_to < 0 || p.acked + p.nacked < p.routed_to) return;
  auto outcome = publish_outcome::routed;
  if (p.routed_to == 0)
    outcome = p.mandatory ? publish_outcome::returned : publish_outcome::dropped;
  else if (p.nacked > 0)
    outcome = publish_outcome::rejected;
  auto owner = std::move(p.owner);
  owner->outcomes_[p.index] = outcome;
  pending_.erase(i);
  if (--owner->remaining_ == 0)
    answers_.push_back({owner->request_, std::move(owner->outcomes_), owner->started_ns_});
}

void publish_confirms::refuse_waiting() {
  std::vector<uint64_t> seqs;
  for (const auto& [seq, p] : pending_) seqs.push_back(seq);
  std::sort(seqs.begin(), seqs.end());  // answers in the order the messages were published
  for (auto seq : seqs) {
    auto& p = pending_.at(seq);
    p.routed_to = std::max<int64_t>(p.routed_to, 1);
    p.nacked = static_cast<uint32_t>(p.routed_to);
    finish_if_known(seq);
  }
}

std::vector<publish_confirms::answer> publish_confirms::take_answers() {
  return std::exchange(answers_, {});
}

std::vector<uint64_t> publish_confirms::abandon() {
  std::vector<uint64_t> requests;
  for (const auto& [seq, p] : pending_)
    if (std::find(requests.begin(), requests.end(), p.owner->request_) == requests.end())
      requests.push_back(p.owner->request_);
  pending_.clear();
  return requests;
}

}  // namespace warren
