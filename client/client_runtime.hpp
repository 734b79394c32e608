// client_runtime (private to the client library): the threads behind a client connection.
//
// One kj thread runs the Cap'n Proto connection; user threads hand it work with call(), which
// blocks the caller until the promise the work returns settles. One worker thread runs
// consumer callbacks, so a slow callback never stalls the network loop (and a callback may call
// back into the client).
#pragma once

#include "broker.capnp.h"
#include "transport/loop_bridge.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <kj/async.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

namespace warren::client {

class client_runtime : public kj::TaskSet::ErrorHandler {
 public:
  /// Connects to the node (over TLS when asked); throws error("DISCONNECTED", ...) when it
  /// cannot be reached and error("TLS_ERROR", ...) when the TLS handshake fails.
  explicit client_runtime(const connect_options& options);
  ~client_runtime();

  client_runtime(const client_runtime&) = delete;
  client_runtime& operator=(const client_runtime&) = delete;

  /// The bootstrap capability; only touch it on the kj thread.
  rpc::Broker::Client& broker() { return *broker_; }

  /// Runs `work` on the kj thread and waits for the promise it returns. Rethrows its failure as
  /// client::error. `work` returns kj::Promise<T>.
  template <class T, class Work>
  T call(Work&& work) {
    return call_async<T>(std::forward<Work>(work)).get();
  }

  /// The same without waiting: the future holds the outcome.
  template <class T, class Work>
  std::future<T> call_async(Work&& work) {
    auto done = std::make_shared<std::promise<T>>();
    auto result = done->get_future();
    post([this, done, work = std::forward<Work>(work)]() mutable {
      try {
        tasks_->add(work().then(
            [done](auto&&... value) { done->set_value(std::forward<decltype(value)>(value)...); },
            [done](kj::Exception&& e) {
              done->set_exception(std::make_exception_ptr(from_exception(e)));
            }));
      } catch (const kj::Exception& e) {
        done->set_exception(std::make_exception_ptr(from_exception(e)));
      } catch (const error&) {
        // Thrown before anything was sent (a closed channel, a settle the broker refused):
        // it must not escape into the loop, which would stop serving this connection.
        done->set_exception(std::current_exception());
      }
    });
    return result;
  }

  /// Runs `work` on the kj thread without waiting; its promise's failure is dropped.
  void fire(std::function<kj::Promise<void>()> work);

  /// Runs `job` on the consumer worker thread.
  void run_on_worker(std::function<void()> job);

  /// Returns once every job queued on the worker before the call has finished (at once on the
  /// worker thread itself, where none can be running).
  void drain_worker();

 private:
  void post(std::function<void()> fn);
  void taskFailed(kj::Exception&& exception) override;
  void kj_main(const connect_options& options, std::promise<void>& ready);
  void worker_main();

  std::thread kj_thread_;
  std::shared_ptr<transport::loop_bridge> bridge_;
  kj::Own<kj::TaskSet> tasks_;
  kj::Own<rpc::Broker::Client> broker_;
  std::mutex stop_mutex_;
  kj::CrossThreadPromiseFulfiller<void>* stop_ = nullptr;
  bool stopping_ = false;

  std::thread worker_;
  std::thread::id worker_id_;
  std::mutex jobs_mutex_;
  std::condition_variable jobs_ready_;
  std::deque<std::function<void()>> jobs_;
  bool worker_stop_ = false;
};

}  // namespace warren::client
