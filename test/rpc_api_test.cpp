// The Cap'n Proto API as a client in another language meets it: raw calls on broker.capnp's
// interfaces, with no help from Warren's client library, against a real node over loopback.
// Each case checks one promise the schema's comments make.
#include <boost/test/unit_test.hpp>

#include "broker.capnp.h"
#include "core/reply_code.hpp"
#include "raw_rpc.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <capnp/ez-rpc.h>
#include <capnp/schema.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

using warren::test::node_process;
using namespace warren::test::raw;
namespace raw = warren::test::raw;

namespace {

// A raw client: the bootstrap Broker, one connection as guest and one channel on it.
struct raw_fixture {
  node_process node;
  capnp::EzRpcClient client{"127.0.0.1", static_cast<unsigned>(node.port())};
  kj::WaitScope& ws = client.getWaitScope();
  warren::rpc::Connection::Client conn = connect();
  warren::rpc::Channel::Client ch = conn.openChannelRequest().send().getChannel();

  warren::rpc::Connection::Client connect() {
    auto req = client.getMain<warren::rpc::Broker>().connectRequest();
    req.setVhost("/");
    req.setUser("guest");
    req.setPassword("guest");
    req.setClientName("raw capnp");
    return req.send().getConnection();
  }

  // Runs the event loop until `done()` holds; fails after the guard time.
  template <class Pred>
  void pump_until(Pred done, const std::string& what) {
    raw::pump_until(client, done, what);
  }

  void declare(const std::string& queue) {
    auto req = ch.queueDeclareRequest();
    req.setName(queue);
    req.send().wait(ws);
  }

  void publish(const std::string& queue, int count) {
    auto req = ch.publishBatchRequest();
    auto list = req.initMessages(static_cast<unsigned>(count));
    for (int i = 0; i < count; ++i) {
      list[static_cast<unsigned>(i)].setRoutingKey(queue);
      list[static_cast<unsigned>(i)].setBody(bytes("m" + std::to_string(i)));
    }
    req.send().wait(ws);
  }

  uint64_t ready(const std::string& queue) {
    auto res = conn.listQueuesRequest().send().wait(ws);
    for (auto q : res.getQueues())
      if (text(q.getName()) == queue) return q.getMessagesReady();
    BOOST_FAIL("no queue " << queue);
    return 0;
  }

  void consume(const std::string& queue, consumer_log& log, bool no_ack, uint32_t prefetch,
               uint32_t max_calls, uint32_t max_batch) {
    auto req = ch.consumeRequest();
    req.setQueue(queue);
    req.setNoAck(no_ack);
    req.setPrefetch(prefetch);
    req.setConsumer(kj::heap<test_consumer>(log));
    auto window = req.initWindow();
    window.setMaxCalls(max_calls);
    window.setMaxBatch(max_batch);
    req.send().wait(ws);
  }
};

// "preconditionFailed" -> "PRECONDITION_FAILED", as broker.capnp's ERRORS section says.
std::string upper_snake(const std::string& camel) {
  std::string out;
  for (char c : camel) {
    if (std::isupper(static_cast<unsigned char>(c))) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_error_code_of_the_schema_is_a_reply_code_the_client_knows) {
  auto enumerants = capnp::Schema::from<warren::rpc::ErrorCode>().getEnumerants();
  BOOST_TEST(enumerants.size() == 15u);
  for (auto e : enumerants) {
    auto name = upper_snake(e.getProto().getName().cStr());
    warren::reply_code code;
    BOOST_TEST(warren::parse_reply_code_name(name, code), name);
    auto kind = warren::client::error_code_of(name);
    BOOST_TEST((kind != warren::client::error_code::internal_error || name == "INTERNAL_ERROR"),
               name);
    BOOST_TEST(warren::reply_code_name(code) == name);
  }
}

BOOST_FIXTURE_TEST_SUITE(raw_calls, raw_fixture)

BOOST_AUTO_TEST_CASE(a_refused_call_fails_with_code_colon_text) {
  auto d = failure_of([&] {
    auto req = ch.queueDeclareRequest();
    req.setName("orders");
    req.setPassive(true);
    req.send().wait(ws);
  });
  auto colon = d.find(": ");
  BOOST_REQUIRE(colon != std::string::npos);
  BOOST_TEST(d.substr(0, colon) == "NOT_FOUND");
  BOOST_TEST(d.substr(colon + 2).find("'orders'") != std::string::npos, d);
  // The C++ client reads the same description into a typed error.
  auto typed = warren::client::from_exception(kj::Exception(
      kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str("remote exception: ", d.c_str())));
  BOOST_TEST((typed.kind() == warren::client::error_code::not_found));
  BOOST_TEST(typed.text() == d.substr(colon + 2));
}

BOOST_AUTO_TEST_CASE(unset_fields_mean_empty) {
  ch.queueDeclareRequest().send().wait(ws);  // no name: a generated one, as ""
  auto declared = [&] {
    auto req = ch.queueDeclareRequest();  // arguments and node unset
    req.setName("q");
    return req.send().wait(ws);
  }();
  BOOST_TEST(text(declared.getName()) == "q");
  auto bind = ch.queueBindRequest();  // arguments unset
  bind.setQueue("q");
  bind.setExchange("amq.direct");
  bind.setBindingKey("k");
  bind.send().wait(ws);
  BOOST_TEST(ch.publishBatchRequest().send().wait(ws).getResults().size() == 0u);
  auto pub = ch.publishRequest();  // exchange, properties and body unset
  pub.initMessage().setRoutingKey("q");
  auto outcome = pub.send().wait(ws).getResult().getOutcome();
  BOOST_TEST((outcome == warren::rpc::PublishResult::Outcome::ROUTED));
  auto get = ch.getRequest();
  get.setQueue("q");
  auto got = get.send().wait(ws);
  BOOST_REQUIRE(got.getResult().isDelivery());
  auto d = got.getResult().getDelivery();
  BOOST_TEST(d.getBody().size() == 0u);
  BOOST_TEST(text(d.getExchange()) == "");
  BOOST_TEST(!d.getProperties().getPersistent());
  BOOST_TEST(d.getProperties().getHeaders().size() == 0u);
  BOOST_TEST(text(d.getProperties().getContentType()) == "");
  ch.ackEachRequest().send().wait(ws);  // no tags: nothing to do
  consumer_log log;
  auto consume = ch.consumeRequest();  // no tag, no window: a generated tag and the defaults
  consume.setQueue("q");
  consume.setConsumer(kj::heap<test_consumer>(log));
  BOOST_TEST(text(consume.send().wait(ws).getConsumerTag()).rfind("amq.ctag-", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(no_ack_consumers_get_at_most_max_calls_of_max_batch) {
  declare("q");
  publish("q", 100);
  consumer_log log;
  log.hold = true;
  consume("q", log, true, 0, 2, 3);
  // The broker took 2 calls of 3 from the queue, and no more while none returns.
  pump_until([&] { return ready("q") == 94; }, "94 ready");
  pump_until([&] { return log.calls.size() == 2; }, "2 calls");
  size_t most_outstanding = 0;
  while (log.delivered() < 100 || log.outstanding() > 0) {
    most_outstanding = std::max(most_outstanding, log.outstanding());
    for (const auto& c : log.calls) BOOST_TEST(c.bodies.size() <= 3u);
    if (log.outstanding() > 0)
      log.release_next();
    else
      pump_until([&] { return log.outstanding() > 0; }, "another call");
  }
  BOOST_TEST(most_outstanding == 2u);
  std::vector<std::string> all;
  for (const auto& c : log.calls) all.insert(all.end(), c.bodies.begin(), c.bodies.end());
  BOOST_REQUIRE(all.size() == 100u);
  for (int i = 0; i < 100; ++i) BOOST_TEST(all[static_cast<size_t>(i)] == "m" + std::to_string(i));
}

BOOST_AUTO_TEST_CASE(with_a_prefetch_only_acks_let_more_deliveries_go) {
  declare("q");
  publish("q", 20);
  consumer_log log;
  log.hold = true;
  consume("q", log, false, 5, 64, 1);
  pump_until([&] { return log.calls.size() == 5; }, "5 calls of 1");
  BOOST_TEST(ready("q") == 15u);
  // Returned calls are no credit: the prefetch counts unacked deliveries.
  while (log.outstanding() > 0) log.release_next();
  auto ack = ch.ackRequest();
  ack.setDeliveryTag(log.calls.front().tags.front());
  ack.send().wait(ws);
  pump_until([&] { return log.calls.size() == 6; }, "a sixth call after the ack");
  BOOST_TEST(ready("q") == 14u);
  BOOST_TEST(log.calls.size() == 6u);
}

BOOST_AUTO_TEST_CASE(window_limits_are_checked) {
  consumer_log log;
  declare("q");
  auto d = failure_of([&] { consume("q", log, true, 0, 65, 1); });
  BOOST_TEST(d.rfind("PRECONDITION_FAILED: ", 0) == 0u, d);
  BOOST_TEST(d.find("64") != std::string::npos, d);
  declare("q");  // refused before it reached the channel, which stays open
}

BOOST_AUTO_TEST_CASE(a_throwing_deliver_cancels_the_consumer_and_requeues_as_redelivered) {
  declare("q");
  publish("q", 3);
  consumer_log log;
  log.fail = true;
  consume("q", log, false, 10, 0, 0);
  pump_until([&] { return !log.cancelled.empty(); }, "cancelled");
  BOOST_TEST(log.cancelled.front() == "deliver failed: the order could not be parsed");
  pump_until([&] { return ready("q") == 3; }, "3 ready again");
  auto get = ch.getRequest();  // the channel stays open
  get.setQueue("q");
  auto got = get.send().wait(ws);  // the response holds what the readers below read
  BOOST_REQUIRE(got.getResult().isDelivery());
  auto d = got.getResult().getDelivery();
  BOOST_TEST(d.getRedelivered());
  auto body = d.getBody();
  BOOST_TEST(std::string(reinterpret_cast<const char*>(body.begin()), body.size()) == "m0");
}

BOOST_AUTO_TEST_CASE(an_unknown_tag_fails_only_its_own_call) {
  declare("q");
  publish("q", 2);
  std::vector<uint64_t> tags;
  for (int i = 0; i < 2; ++i) {
    auto get = ch.getRequest();
    get.setQueue("q");
    tags.push_back(get.send().wait(ws).getResult().getDelivery().getDeliveryTag());
  }
  auto d = failure_of([&] {
    auto ack = ch.ackRequest();
    ack.setDeliveryTag(42);
    ack.send().wait(ws);
  });
  BOOST_TEST(d.rfind("PRECONDITION_FAILED: ", 0) == 0u, d);
  BOOST_TEST(d.find("42") != std::string::npos, d);
  // Every known tag of an ackEach is acked around the unknown one.
  d = failure_of([&] {
    auto req = ch.ackEachRequest();
    auto list = req.initDeliveryTags(3);
    list.set(0, tags[0]);
    list.set(1, 77);
    list.set(2, tags[1]);
    req.send().wait(ws);
  });
  BOOST_TEST(d.find("77") != std::string::npos, d);
  auto res = conn.listQueuesRequest().send().wait(ws);
  BOOST_REQUIRE(res.getQueues().size() == 1u);
  BOOST_TEST(res.getQueues()[0].getMessagesUnacked() == 0u);
  BOOST_TEST(res.getQueues()[0].getTraffic().getAcked() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

// The C++ client passes its consume_options' window on: one call of one message at a time.
BOOST_AUTO_TEST_CASE(the_client_library_sets_the_window_at_consume) {
  // The callback's state outlives the channel, whose destructor waits for callbacks.
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;
  bool go = false;
  node_process node;
  warren::client::connect_options o;
  o.port = node.port();
  auto conn = warren::client::connection::open(o);
  auto ch = conn->open_channel();
  ch->queue_declare("q");
  std::vector<warren::client::outbound_message> batch(10);
  for (auto& m : batch) m.routing_key = "q";
  ch->publish_batch(batch).get();
  warren::client::consume_options c;
  c.no_ack = true;
  c.max_calls = 1;
  c.max_batch = 1;
  ch->consume("q", c, [&](const warren::client::delivery&) {
    std::unique_lock<std::mutex> lock(mutex);
    ++started;
    changed.notify_all();
    changed.wait(lock, [&] { return go; });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE(changed.wait_for(lock, patience, [&] { return started == 1; }));
  }
  auto queues = conn->list_queues();
  BOOST_REQUIRE(queues.size() == 1u);
  BOOST_TEST(queues.front().messages_ready == 9u);  // one taken: the window is one message
  {
    std::lock_guard<std::mutex> guard(mutex);
    go = true;
  }
  changed.notify_all();
  std::unique_lock<std::mutex> lock(mutex);
  BOOST_TEST(changed.wait_for(lock, patience, [&] { return started == 10; }));
}
