// Traffic counters kept by queues and connections, and the rates between two readings of them.
// Counters only grow; rates are computed by whoever reads them twice (warrenctl stats, the
// node's --stats-interval log), so the broker keeps no timers or windows for statistics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace warren {

struct traffic_counters {
  uint64_t published = 0;    // messages taken in: enqueued (queue), published (connection)
  uint64_t delivered = 0;    // messages handed out, by push or by get
  uint64_t acked = 0;        // deliveries settled by a positive ack
  uint64_t redelivered = 0;  // deliveries marked redelivered
  uint64_t bytes_in = 0;     // body bytes taken in
  uint64_t bytes_out = 0;    // body bytes handed out

  void count_in(uint64_t body_bytes) {
    ++published;
    bytes_in += body_bytes;
  }
  void count_out(uint64_t body_bytes, bool was_redelivered) {
    ++delivered;
    bytes_out += body_bytes;
    if (was_redelivered) ++redelivered;
  }
  traffic_counters& operator+=(const traffic_counters& o);
};

struct traffic_rates {
  double published = 0, delivered = 0, acked = 0, redelivered = 0, bytes_in = 0, bytes_out = 0;

  traffic_rates& operator+=(const traffic_rates& o);
};

/// Per-second rates between two readings `seconds` apart. A counter that went down (its queue
/// was deleted and declared again) counts from zero.
traffic_rates rates_between(const traffic_counters& before, const traffic_counters& after,
                            double seconds);

/// The rates of every row of `after` (anything with a `traffic` member), against the row of
/// `before` with the same `key(row)`; a row that is new counts from zero.
template <class Row, class Key>
std::vector<traffic_rates> rates_by_key(const std::vector<Row>& before,
                                        const std::vector<Row>& after, double seconds, Key key) {
  std::map<std::string, const traffic_counters*> earlier;
  for (const auto& row : before) earlier[key(row)] = &row.traffic;
  static const traffic_counters zero;
  std::vector<traffic_rates> out;
  out.reserve(after.size());
  for (const auto& row : after) {
    auto i = earlier.find(key(row));
    out.push_back(rates_between(i == earlier.end() ? zero : *i->second, row.traffic, seconds));
  }
  return out;
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, traffic_counters& x) {
  return f(x.published, x.delivered, x.acked, x.redelivered, x.bytes_in, x.bytes_out);
}

}  // namespace warren
