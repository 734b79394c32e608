#include "transport/loop_bridge.hpp"

#include "core/log.hpp"

#include <kj/exception.h>

#include <string>

namespace warren::transport {

loop_bridge::loop_bridge() = default;

void loop_bridge::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (closed_) return;
  queue_.push_back(std::move(fn));
  if (wake_armed_) {
    wake_armed_ = false;
    wake_->fulfill();
  }
}

kj::Promise<void> loop_bridge::wait_for_work() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!queue_.empty() || closed_) return kj::READY_NOW;
  auto pair = kj::newPromiseAndCrossThreadFulfiller<void>();
  wake_ = kj::mv(pair.fulfiller);
  wake_armed_ = true;
  return kj::mv(pair.promise);
}

kj::Promise<void> loop_bridge::run() {
  return wait_for_work().then([this]() -> kj::Promise<void> {
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (closed_) return kj::READY_NOW;
      work.swap(queue_);
    }
    // One failing piece of work (a session writing to a socket that just broke) must not stop
    // the loop's bridge: every later post for every connection on this loop would wait for ever.
    for (auto& fn : work) {
      KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] { fn(); })) {
        warren::log(log_level::warn, "loop",
                    std::string("posted work failed: ") + e->getDescription().cStr());
      }
    }
    return run();
  });
}

void loop_bridge::close() {
  std::lock_guard<std::mutex> guard(mutex_);
  closed_ = true;
  queue_.clear();
  if (wake_armed_) {
    wake_armed_ = false;
    wake_->fulfill();
  }
}

}  // namespace warren::transport
