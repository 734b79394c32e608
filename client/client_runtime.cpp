#include "client/client_runtime.hpp"

#include "transport/tls_context.hpp"

#include <capnp/message.h>

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <future>

namespace warren::client {

namespace {

/// Largest message read from or sent to the node: 512 MiB: the largest --max-message-size a node
/// takes. Cap'n Proto also refuses to *send*
// beyond this, so a bigger message fails here; smaller ones over the node's maximum get the
// node's clear PRECONDITION_FAILED.
constexpr uint64_t max_message_words = uint64_t{64} * 1024 * 1024;

}  // namespace

client_runtime::client_runtime(const connect_options& options) {
  std::promise<void> ready;
  auto started = ready.get_future();
  kj_thread_ = std::thread([this, options, &ready] { kj_main(options, ready); });
  try {
    started.get();
  } catch (...) {
    kj_thread_.join();
    throw;
  }
  worker_ = std::thread([this] { worker_main(); });
  worker_id_ = worker_.get_id();
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

namespace {

// The TCP connection to the node, with a TLS handshake on it when asked for.
kj::Own<kj::AsyncIoStream> connect_stream(const connect_options& options, kj::AsyncIoContext& io,
                                          std::unique_ptr<transport::tls_context>& tls) {
  auto address =
      io.provider->getNetwork().parseAddress(options.host, options.port).wait(io.waitScope);
  auto stream = address->connect().wait(io.waitScope);
  if (!options.tls) return stream;
  try {
    tls = transport::tls_context::client({options.tls_cert, options.tls_key, options.tls_ca});
  } catch (const std::runtime_error& e) {
    throw error("TLS_ERROR", e.what());
  }
  auto where = options.host + ":" + std::to_string(options.port);
  auto name = options.tls_server_name.empty() ? options.host : options.tls_server_name;
  try {
    return tls->get().wrapClient(kj::mv(stream), name).wait(io.waitScope);
  } catch (const kj::Exception& e) {
    throw error("TLS_ERROR",
                "TLS handshake with " + where + " failed: " + e.getDescription().cStr());
  }
}

}  // namespace

void client_runtime::kj_main(const connect_options& options, std::promise<void>& ready) {
  try {
    auto io = kj::setupAsyncIo();
    std::unique_ptr<transport::tls_context> tls;
    auto stream = connect_stream(options, io, tls);
    capnp::ReaderOptions reader;
    reader.traversalLimitInWords = max_message_words;
    capnp::TwoPartyVatNetwork network(*stream, capnp::rpc::twoparty::Side::CLIENT, reader);
    auto rpc = capnp::makeRpcClient(network);
    capnp::word server_id_space[4] = {};
    capnp::MallocMessageBuilder server_id_message(server_id_space);
    auto server_id = server_id_message.initRoot<capnp::rpc::twoparty::VatId>();
    server_id.setSide(capnp::rpc::twoparty::Side::SERVER);
    bridge_ = std::make_shared<transport::loop_bridge>();
    tasks_ = kj::heap<kj::TaskSet>(*this);
    tasks_->add(bridge_->run());
    broker_ = kj::heap<rpc::Broker::Client>(rpc.bootstrap(server_id).castAs<rpc::Broker>());
    auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard<std::mutex> guard(stop_mutex_);
      stop_ = stop.fulfiller.get();
      if (stopping_) stop_->fulfill();
    }
    ready.set_value();
    stop.promise.wait(io.waitScope);
    {
      std::lock_guard<std::mutex> guard(stop_mutex_);
      stop_ = nullptr;
    }
    bridge_->close();
    broker_ = nullptr;
    tasks_ = nullptr;
  } catch (const kj::Exception& e) {
    ready.set_exception(std::make_exception_ptr(from_exception(e)));
  } catch (const error&) {
    ready.set_exception(std::current_exception());
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
    } catch (const error&) {
    }
  });
}

void client_runtime::taskFailed(kj::Exception&&) {
  // Only fire-and-forget work (acks, releases) ends up here. A refused settle was kept for the
  // next call that waits (channel.cpp, noting_failure); anything else shows on that call too.
}

void client_runtime::run_on_worker(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard(jobs_mutex_);
    // Once stopping, jobs are dropped here, on the calling (kj) thread.
    if (!worker_stop_) jobs_.push_back(std::move(job));
  }
  jobs_ready_.notify_one();
}

void client_runtime::drain_worker() {
  if (std::this_thread::get_id() == worker_id_) return;
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  {
    std::lock_guard<std::mutex> guard(jobs_mutex_);
    if (worker_stop_) return;
    jobs_.push_back([done] { done->set_value(); });
  }
  jobs_ready_.notify_one();
  finished.wait();
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
