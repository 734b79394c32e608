// What the broker's end-to-end suites share: a real warren-node on a free port with a client
// connection and channel to it (broker_fixture), a collector of consumer deliveries, and small
// helpers to publish, read queue rows and expect broker errors.
#pragma once

#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warren::test::broker {

// The suites take the client library's names and node_process through this namespace.
using namespace warren::client;
using warren::test::node_process;

// Guards against a hung test only; never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

// Collects deliveries from a consumer callback and lets the test wait for a count.
struct collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<delivery> got;
  std::vector<std::string> cancellations;

  channel::message_handler handler() {
    return [this](const delivery& d) {
      std::lock_guard<std::mutex> guard(mutex);
      got.push_back(d);
      changed.notify_all();
    };
  }
  channel::cancel_handler on_cancel() {
    return [this](const std::string& tag, const std::string& reason) {
      std::lock_guard<std::mutex> guard(mutex);
      cancellations.push_back(tag + ": " + reason);
      changed.notify_all();
    };
  }
  std::vector<delivery> wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE_MESSAGE(changed.wait_for(lock, patience, [&] { return got.size() >= n; }),
                          "expected " << n << " deliveries, got " << got.size());
    return got;
  }
  void wait_for_cancel() {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE(changed.wait_for(lock, patience, [&] { return !cancellations.empty(); }));
  }
};

struct broker_fixture {
  // Collectors outlive every connection and channel below, since callbacks can run until a
  // consumer's connection is gone (requeued messages go to whoever still consumes).
  std::deque<collector> collectors;
  node_process node;
  std::unique_ptr<connection> conn = open();
  std::unique_ptr<channel> ch = conn->open_channel();

  std::unique_ptr<connection> open(const std::string& vhost = "/",
                                   const std::string& name = "test") {
    connect_options o;
    o.port = node.port();
    o.vhost = vhost;
    o.client_name = name;
    return connection::open(o);
  }

  collector& make_collector() { return collectors.emplace_back(); }

  static outbound_message message(const std::string& exchange, const std::string& key,
                                  const std::string& body) {
    outbound_message m;
    m.exchange = exchange;
    m.routing_key = key;
    m.body = body;
    return m;
  }

  publish_result send(const std::string& exchange, const std::string& key,
                      const std::string& body) {
    return ch->publish(message(exchange, key, body));
  }

  queue_row queue_stats(const std::string& name) {
    for (auto& q : conn->list_queues())
      if (q.name == name) return q;
    BOOST_FAIL("no queue " << name);
    return {};
  }

  // Polls until the broker reports `pred` of the queue (the broker settles asynchronously after
  // a client vanishes); fails after the guard time.
  template <class Pred>
  queue_row wait_queue(const std::string& name, Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
      auto q = queue_stats(name);
      if (pred(q)) return q;
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "queue " << name << " never reached the expected state");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Settle errors are reported by a later call that waits: calls `f` until it throws.
  error later_error(const std::function<void()>& f) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        f();
      } catch (const error& e) {
        return e;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    BOOST_FAIL("expected a broker error");
    return error("", "");
  }

  std::string expect_error(const std::function<void()>& f) {
    try {
      f();
    } catch (const error& e) {
      return e.code();
    }
    BOOST_FAIL("expected a broker error");
    return {};
  }
};

inline std::vector<std::string> bodies(const std::vector<delivery>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(d.body);
  return out;
}

using strings = std::vector<std::string>;

}  // namespace warren::test::broker
