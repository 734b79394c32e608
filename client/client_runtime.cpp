#include "client/client_runtime.hpp"

namespace warren::client {

namespace {

/// Largest message read from or sent to the node: 512 MiB: the largest --max-message-size a node
/// takes. Cap'n Proto also refuses to *send*
// beyond this, so a bigger message fails here; smaller ones over the node's maximum get the
// node's clear PRECONDITION_FAILED.
constexpr uint64_t max_message_words = uint64_t{64} * 1024 * 1024;

}  // namespace

client_runtime::client_runtime(const std::string& host, uint16_t port) {
  std::promise<void> ready;
  auto started = ready.get_future();
  kj_thread_ = std::thread([this, host, port, &ready] { kj_main(host, port, ready); });
  try {
    started.get();
  } catch (...) {
    kj_thread_.join();
    throw;
  }
  worker_ = std::thread([this] { worker_main(); });
}

client_runtime::~client_runtime() {
  // The worker goes first, while the kj loop still runs: its pending jobs hold cross-thread
  // fulfillers of that loop, which must be fulfilled or dropped before the loop is destroyed.
  {
    std::lock_guard<std::mutex> guard(jobs_mutex_);
    worker_stop_ = true;
  }
  jobs_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  {
    std::lock_guard<std::mutex> guard(stop_mutex_);
    stopping_ = true;
    if (stop_ != nullptr) stop_->fulfill();
  }
  if (kj_thread_.joinable()) kj_thread_.join();
}

void client_runtime::kj_main(std::string host, uint16_t port, std::promise<void>& ready) {
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = max_message_words;
    capnp::EzRpcClient rpc(host, port, options);
    bridge_ = std::make_shared<net::loop_bridge>();
    tasks_ = kj::heap<kj::TaskSet>(*this);
    tasks_->add(bridge_->run());
    broker_ = kj::heap<rpc::Broker::Client>(rpc.getMain<rpc::Broker>());
    auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard<std::mutex> guard(stop_mutex_);
      stop_ = stop.fulfiller.get();
      if (stopping_) stop_->fulfill();
    }
    ready.set_value();
    stop.promise.wait(rpc.getWaitScope());
    {
      std::lock_guard<std::mutex> guard(stop_mutex_);
      stop_ = nullptr;
    }
    bridge_->close();
    broker_ = nullptr;
    tasks_ = nullptr;
  } catch (const kj::Exception& e) {
    ready.set_exception(std::make_exception_ptr(from_exception(e)));
  }
}

void client_runtime::post(std::function<void()> fn) {
  bridge_->post(std::move(fn));
}

void client_runtime::fire(std::function<kj::Promise<void>()> work) {
  post([this, work = std::move(work)]() {
    try {
      tasks_->add(work());
    } catch (const kj::Exception&) {
    }
  });
}

void client_runtime::taskFailed(kj::Exception&&) {
  // Only fire-and-forget work (acks, releases) ends up here; its failure shows on the next
  // call that waits, since the broker closes the channel on a failed settle.
}

void client_runtime::run_on_worker(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard(jobs_mutex_);
    // Once stopping, jobs are dropped here, on the calling (kj) thread.
    if (!worker_stop_) jobs_.push_back(std::move(job));
  }
  jobs_ready_.notify_one();
}

void client_runtime::worker_main() {
  std::unique_lock<std::mutex> lock(jobs_mutex_);
  for (;;) {
    jobs_ready_.wait(lock, [this] { return worker_stop_ || !jobs_.empty(); });
    if (worker_stop_) {
      // Callbacks not yet run are dropped: their messages were never acked, so the broker
      // requeues them when the connection closes.
      auto dropped = std::move(jobs_);
      jobs_.clear();
      lock.unlock();
      return;
    }
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace warren::client
