// node_stats: the periodic statistics of warren-node --stats-interval. A thread that, every
// interval, reads the node's counters and logs a summary line with the node's rates, then a
// compact table of the queues that hold messages, have consumers or had traffic.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace warren {

class node_stats {
 public:
  node_stats(caf::actor_system& system, caf::actor node, unsigned interval_seconds);
  ~node_stats();  // stops the thread

 private:
  void run();

  caf::actor_system& system_;
  caf::actor node_;
  unsigned interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace warren
