// shutdown_deadline: bounds the last step of warren-node's stop, CAF closing its connections.
//
// When warren-node stops, its own actors finish first and its metadata store and queue files
// close; then ~actor_system stops CAF's middleman, whose network thread runs until every
// connection is closed at both ends: CAF 0.17 writes out what a connection holds, half-closes
// it and waits for the peer's FIN, with no timeout. A member behind a link that drops packets
// (or a hung one) never answers, and the node would sit there until killed. Nothing of the
// node's own is left to lose at that point, so after `grace` the process exits with the code it
// would have returned, saying why.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace warren {

class shutdown_deadline {
 public:
  shutdown_deadline() = default;
  shutdown_deadline(const shutdown_deadline&) = delete;
  shutdown_deadline& operator=(const shutdown_deadline&) = delete;
  ~shutdown_deadline();  // disarms

  /// From now on, the process exits with `exit_code` unless this is destroyed within `grace`.
  void arm(std::chrono::milliseconds grace, int exit_code);

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace warren
