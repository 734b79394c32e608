// loop_bridge: lets any thread (CAF workers above all) run a function on one kj event loop.
//
// post() appends to a mutex-protected list and, if the loop is idle, wakes it through a
// kj cross-thread fulfiller; the loop runs everything posted since the last wake in one go, so
// a busy broker pays one wake-up per batch rather than per message. Functions run in the order
// they were posted. Actors never see kj types; kj objects never leave the loop's thread.
#pragma once

#include <kj/async.h>

#include <functional>
#include <mutex>
#include <vector>

namespace warren::transport {

class loop_bridge {
 public:
  /// Construct on the kj thread whose loop will run posted functions.
  loop_bridge();

  /// Any thread. After close(), posted functions are dropped.
  void post(std::function<void()> fn);

  /// The kj thread: a promise that runs posted functions until close(); add it to a TaskSet.
  kj::Promise<void> run();

  /// The kj thread: stop taking work (at shutdown).
  void close();

 private:
  kj::Promise<void> wait_for_work();

  std::mutex mutex_;
  std::vector<std::function<void()>> queue_;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake_;  // created and destroyed on the kj thread
  bool wake_armed_ = false;
  bool closed_ = false;
};

}  // namespace warren::transport
