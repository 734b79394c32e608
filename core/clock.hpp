// The clocks Warren reads, in the units its records and timers use. Steady time measures
// intervals (timeouts, heartbeats, uptime, x-expires) and never jumps; wall time is what is
// stored or shown (enqueue times for TTL and streams, x-death's time, grant expiry).
#pragma once

#include <chrono>
#include <cstdint>

namespace warren {

/// Milliseconds of the steady clock: only differences mean anything.
inline int64_t steady_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

/// Nanoseconds of the steady clock, for latencies.
inline int64_t steady_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

/// Milliseconds since the Unix epoch.
inline int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

/// Seconds since the Unix epoch (AMQP timestamps).
inline int64_t wall_seconds() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace warren
