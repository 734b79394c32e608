#include "apps/shutdown_deadline.hpp"

#include "core/log.hpp"

#include <cstdlib>
#include <string>

namespace warren {

void shutdown_deadline::arm(std::chrono::milliseconds grace, int exit_code) {
  thread_ = std::thread([this, grace, exit_code] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (done_.wait_for(lock, grace, [this] { return finished_; })) return;
    log(log_level::warn, "node",
        "stopped, but connections to cluster members that do not answer (a cut link) still "
        "hold " +
            std::to_string(grace.count()) + " ms after the stop; exiting without waiting for them");
    std::_Exit(exit_code);
  });
}

shutdown_deadline::~shutdown_deadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  done_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace warren
