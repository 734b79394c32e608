// warren::client::channel's publishing: single messages, and batches cut into calls and sent on
// a few lanes at once. Its own file because batching is a mechanism of its own.
#include "warren/channel.hpp"

#include "client/channel_calls.hpp"
#include "client/client_runtime.hpp"
#include "client/client_state.hpp"
#include "client/client_wire.hpp"

#include <utility>

namespace warren::client {

publish_result channel::publish(const outbound_message& message) {
  auto st = state_;
  return runtime_->call<publish_result>([st, &message]() {
    auto req = cap_of(st).publishRequest();
    write_outbound(message, req.initMessage());
    return req.send().then([](capnp::Response<rpc::Channel::PublishResults>&& r) {
      return read_publish_result(r.getResult());
    });
  });
}

namespace {

/// Bytes of bodies per publishBatch call; bigger batches are split (the node reads at most
/// 128 MiB per call, and smaller calls keep the pipeline moving).
constexpr size_t max_batch_bytes = 4 << 20;
constexpr size_t max_batch_messages = 5000;

// A publish_batch cut into calls of at most max_batch_messages and about max_batch_bytes, sent
// on `lanes` lanes, one call in flight on each: broker.capnp's rule of 4 to 8 calls in flight,
// which also keeps a big batch under the node's flow limit on unanswered calls.
struct batch_run {
  std::vector<outbound_message> msgs;
  std::vector<std::pair<size_t, size_t>> calls;  // [first, last) of msgs
  std::vector<std::vector<publish_result>> results;
  static constexpr size_t lanes = 8;
};

kj::Promise<void> send_lane(std::shared_ptr<channel::state> st, std::shared_ptr<batch_run> run,
                            size_t call) {
  if (call >= run->calls.size()) return kj::READY_NOW;
  auto [first, last] = run->calls[call];
  auto req = cap_of(st).publishBatchRequest();
  auto list = req.initMessages(static_cast<unsigned>(last - first));
  for (size_t i = first; i < last; ++i)
    write_outbound(run->msgs[i], list[static_cast<unsigned>(i - first)]);
  return req.send().then(
      [st, run, call](capnp::Response<rpc::Channel::PublishBatchResults>&& r) mutable {
        auto& out = run->results[call];
        out.reserve(r.getResults().size());
        for (auto x : r.getResults()) out.push_back(read_publish_result(x));
        return send_lane(st, run, call + batch_run::lanes);
      });
}

}  // namespace

std::future<std::vector<publish_result>> channel::publish_batch(
    std::vector<outbound_message> messages) {
  auto st = state_;
  auto run = std::make_shared<batch_run>();
  run->msgs = std::move(messages);
  return runtime_->call_async<std::vector<publish_result>>([st, run]() {
    const auto& msgs = run->msgs;
    for (size_t first = 0, last = 0; first < msgs.size(); first = last) {
      size_t bytes = 0;
      while (last < msgs.size() && last - first < max_batch_messages &&
             (last == first || bytes + msgs[last].body.size() <= max_batch_bytes))
        bytes += msgs[last++].body.size();
      run->calls.emplace_back(first, last);
    }
    run->results.resize(run->calls.size());
    auto lanes = kj::heapArrayBuilder<kj::Promise<void>>(batch_run::lanes);
    for (size_t lane = 0; lane < batch_run::lanes; ++lane) lanes.add(send_lane(st, run, lane));
    return kj::joinPromises(lanes.finish()).then([run]() {
      std::vector<publish_result> all;
      all.reserve(run->msgs.size());
      for (auto& r : run->results) all.insert(all.end(), r.begin(), r.end());
      return all;
    });
  });
}

void channel::confirm_select() {
  auto st = state_;
  runtime_->call<void>([st]() { return cap_of(st).confirmSelectRequest().send().ignoreResult(); });
}

}  // namespace warren::client
