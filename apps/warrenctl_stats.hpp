// warrenctl stats: reads the node's counters twice and prints the rates between the readings,
// per queue, per connection and for the node; --watch keeps printing one report per interval.
#pragma once

#include "warren/connection.hpp"

namespace warrenctl {

struct stats_options {
  double interval_seconds = 1;
  bool watch = false;
  unsigned reports = 0;  // with watch: stop after this many (0 = until interrupted)
  bool json = false;     // one JSON object per report
};

void run_stats(warren::client::connection& conn, const stats_options& options);

}  // namespace warrenctl
