#include "core/latency_histogram.hpp"

namespace warren {

void latency_histogram::observe(int64_t nanos, uint64_t n) {
  if (nanos < 0) nanos = 0;
  double seconds = static_cast<double>(nanos) / 1e9;
  std::size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  buckets_[i].fetch_add(n, std::memory_order_relaxed);
  count_.fetch_add(n, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(nanos) * n, std::memory_order_relaxed);
}

latency_histogram::reading latency_histogram::read() const {
  reading r;
  uint64_t running = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    r.cumulative[i] = running;
  }
  // Read apart from the buckets: the +Inf bucket must equal the count, as Prometheus expects.
  r.count = running;
  r.sum_seconds = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
  return r;
}

latency_histogram& publish_confirm_latency() {
  static latency_histogram histogram;
  return histogram;
}

}  // namespace warren
