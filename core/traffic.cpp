#include "core/traffic.hpp"

namespace warren {

traffic_counters& traffic_counters::operator+=(const traffic_counters& o) {
  published += o.published;
  delivered += o.delivered;
  acked += o.acked;
  redelivered += o.redelivered;
  bytes_in += o.bytes_in;
  bytes_out += o.bytes_out;
  return *this;
}

traffic_rates& traffic_rates::operator+=(const traffic_rates& o) {
  published += o.published;
  delivered += o.delivered;
  acked += o.acked;
  redelivered += o.redelivered;
  bytes_in += o.bytes_in;
  bytes_out += o.bytes_out;
  return *this;
}

namespace {

double rate(uint64_t before, uint64_t after, double seconds) {
  if (seconds <= 0) return 0;
  uint64_t grown = after >= before ? after - before : after;
  return static_cast<double>(grown) / seconds;
}

}  // namespace

traffic_rates rates_between(const traffic_counters& before, const traffic_counters& after,
                            double seconds) {
  return {rate(before.published, after.published, seconds),
          rate(before.delivered, after.delivered, seconds),
          rate(before.acked, after.acked, seconds),
          rate(before.redelivered, after.redelivered, seconds),
          rate(before.bytes_in, after.bytes_in, seconds),
          rate(before.bytes_out, after.bytes_out, seconds)};
}

}  // namespace warren
