// delivery_tags: a channel's delivery tags and the deliveries it holds unacknowledged. Pure
// bookkeeping, no actors (Queue is how a delivery's queue is named: the connection actor uses
// caf::actor, tests anything ordered).
//
// Every delivery, acked or not, takes the channel's next tag (a tag of 0 means "no message" to
// some clients). Tags grow with time, so the first held delivery is the oldest.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace warren {

template <class Queue>
class delivery_tags {
 public:
  struct held {
    Queue queue;
    uint64_t delivery_id;      // the queue's name for this hand-out
    std::string consumer_tag;  // empty for a get
    int64_t delivered_ms;      // steady clock: for the consumer timeout
  };

  /// The tag for the next delivery.
  uint64_t next() { return ++last_; }

  /// Holds delivery `tag` until it is settled.
  void hold(uint64_t tag, held h) { held_.emplace(tag, std::move(h)); }

  /// Takes `tag` out (multiple: every tag up to it; tag 0 with multiple: all). Nothing when the
  /// tag is not held (for multiple: when nothing up to it is).
  std::optional<std::vector<held>> take(uint64_t tag, bool multiple) {
    std::vector<held> out;
    if (multiple) {
      auto end = tag == 0 ? held_.end() : held_.upper_bound(tag);
      if (held_.begin() == end && tag != 0) return std::nullopt;
      for (auto i = held_.begin(); i != end; ++i) out.push_back(std::move(i->second));
      held_.erase(held_.begin(), end);
    } else {
      auto i = held_.find(tag);
      if (i == held_.end()) return std::nullopt;
      out.push_back(std::move(held_.extract(i).mapped()));
    }
    return out;
  }

  /// Takes each tag in turn; stops at the first one not held (returned), having taken the ones
  /// before it. A tag twice is not held the second time.
  std::pair<std::vector<held>, std::optional<uint64_t>> take_each(
      const std::vector<uint64_t>& tags) {
    std::vector<held> out;
    out.reserve(tags.size());
    for (auto tag : tags) {
      auto i = held_.find(tag);
      if (i == held_.end()) return {std::move(out), tag};
      out.push_back(std::move(held_.extract(i).mapped()));
    }
    return {std::move(out), std::nullopt};
  }

  /// A consumer was cancelled. If its queue requeued its deliveries their tags are void;
  /// otherwise (AMQP's basic.cancel) they stay, settled like gets (no credit to give back).
  void forget_consumer(const std::string& consumer_tag, bool requeued) {
    for (auto i = held_.begin(); i != held_.end();) {
      if (i->second.consumer_tag != consumer_tag) {
        ++i;
      } else if (requeued) {
        i = held_.erase(i);
      } else {
        i->second.consumer_tag.clear();
        ++i;
      }
    }
  }

  /// When the oldest held delivery was made.
  std::optional<int64_t> oldest_ms() const {
    if (held_.empty()) return std::nullopt;
    return held_.begin()->second.delivered_ms;
  }

  /// The newest held tag (0 when nothing is held).
  uint64_t newest() const { return held_.empty() ? 0 : std::prev(held_.end())->first; }

  bool empty() const { return held_.empty(); }
  size_t size() const { return held_.size(); }

  /// Taken deliveries grouped for settling: each queue's delivery ids, each consumer's count.
  struct settlement {
    std::map<Queue, std::vector<uint64_t>> by_queue;
    std::map<std::string, uint32_t> by_consumer;
  };
  static settlement group(const std::vector<held>& taken) {
    settlement s;
    for (const auto& h : taken) {
      s.by_queue[h.queue].push_back(h.delivery_id);
      if (!h.consumer_tag.empty()) ++s.by_consumer[h.consumer_tag];
    }
    return s;
  }

 private:
  uint64_t last_ = 0;
  std::map<uint64_t, held> held_;
};

}  // namespace warren
