// Helpers for tests that speak broker.capnp directly, as a client in another language would:
// a Consumer that records (and can hold) its deliver calls, and reading failures.
#pragma once

#include "broker.capnp.h"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/debug.h>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace warren::test::raw {

// Guards against a hung test only; never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

inline std::string text(capnp::Text::Reader t) {
  return std::string(t.cStr(), t.size());
}

inline capnp::Data::Reader bytes(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

// One deliver call the test consumer has not returned from yet (or has).
struct held_call {
  std::vector<std::string> bodies;
  std::vector<uint64_t> tags;
  kj::Own<kj::PromiseFulfiller<void>> release;
};

// What a test consumer saw; `hold` keeps every deliver call open until the test releases it.
struct consumer_log {
  bool hold = false;
  bool fail = false;  // throw from deliver
  std::vector<held_call> calls;
  size_t released = 0;
  std::vector<std::string> cancelled;

  size_t outstanding() const { return calls.size() - released; }
  void release_next() { calls.at(released++).release->fulfill(); }
  size_t delivered() const {
    size_t n = 0;
    for (const auto& c : calls) n += c.bodies.size();
    return n;
  }
};

class test_consumer final : public warren::rpc::Consumer::Server {
 public:
  explicit test_consumer(consumer_log& log) : log_(log) {}

 protected:
  kj::Promise<void> deliver(DeliverContext ctx) override {
    if (log_.fail) return KJ_EXCEPTION(FAILED, "the order could not be parsed");
    held_call call;
    for (auto d : ctx.getParams().getDeliveries()) {
      auto body = d.getBody();
      call.bodies.emplace_back(reinterpret_cast<const char*>(body.begin()), body.size());
      call.tags.push_back(d.getDeliveryTag());
    }
    auto pair = kj::newPromiseAndFulfiller<void>();
    call.release = kj::mv(pair.fulfiller);
    log_.calls.push_back(kj::mv(call));
    if (!log_.hold) log_.release_next();
    return kj::mv(pair.promise);
  }

  kj::Promise<void> cancelled(CancelledContext ctx) override {
    log_.cancelled.push_back(text(ctx.getParams().getReason()));
    return kj::READY_NOW;
  }

 private:
  consumer_log& log_;
};

// Runs `client`'s event loop until `done()` holds; fails after the guard time.
template <class Pred>
void pump_until(capnp::EzRpcClient& client, Pred done, const std::string& what) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "never: " << what);
    client.getIoProvider().getTimer().afterDelay(5 * kj::MILLISECONDS).wait(client.getWaitScope());
  }
}

// The description of the exception `f` fails with, after the C++ runtime's own prefix.
template <class F>
std::string failure_of(F f) {
  try {
    f();
  } catch (const kj::Exception& e) {
    BOOST_TEST((e.getType() == kj::Exception::Type::FAILED));
    std::string d = e.getDescription().cStr();
    const std::string remote = "remote exception: ";
    return d.rfind(remote, 0) == 0 ? d.substr(remote.size()) : d;
  }
  BOOST_FAIL("expected the call to fail");
  return {};
}

}  // namespace warren::test::raw
