// latency_histogram: a Prometheus-style histogram of durations that any thread may add to
// (relaxed atomics, no lock) and any thread may read. The node keeps one for the time from a
// publish call's arrival to its confirm; the management door exposes it in /metrics.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace warren {

class latency_histogram {
 public:
  /// Upper bounds of the buckets, in seconds (the +Inf bucket follows).
  static constexpr std::array<double, 14> bounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

  struct reading {
    std::array<uint64_t, bounds.size() + 1> cumulative{};  // observations <= each bound, +Inf
    uint64_t count = 0;
    double sum_seconds = 0;
  };

  /// `n` observations of `nanos` each.
  void observe(int64_t nanos, uint64_t n = 1);
  reading read() const;

 private:
  std::array<std::atomic<uint64_t>, bounds.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_nanos_{0};
};

/// From a publish call reaching its connection to its answer (the confirm), per message.
latency_histogram& publish_confirm_latency();

}  // namespace warren
