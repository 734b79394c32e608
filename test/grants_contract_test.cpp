// What broker.capnp promises a client written from the schema alone, held against a real node
// with raw Cap'n Proto calls: a grant's capability outlives any refusal of one call, tokens
// open by kind with pipelining, a consumer grant on a stream takes an offset and a group, a
// Publisher's empty exchange is its grant's, and an empty user name is refused by name.
#include <boost/test/unit_test.hpp>

#include "grants_fixture.hpp"

using namespace warren::test::grants;

namespace {

// Declares queue `name` on the fixture's channel, with `type` as x-queue-type when given.
void declare_queue(grants_fixture& f, const std::string& name, const std::string& type = {}) {
  auto q = f.ch.queueDeclareRequest();
  q.setName(name);
  q.setDurable(true);
  if (!type.empty()) {
    auto args = q.initArguments(1);
    args[0].setKey("x-queue-type");
    args[0].initValue().setText(type);
  }
  q.send().wait(f.ws);
}

void publish_to_queue(grants_fixture& f, const std::string& queue, int count) {
  for (int i = 0; i < count; ++i) {
    auto req = f.ch.publishRequest();
    auto m = req.initMessage();
    m.setRoutingKey(queue);
    m.setBody(bytes("m" + std::to_string(i)));
    req.send().wait(f.ws);
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(contract, grants_fixture)

BOOST_AUTO_TEST_CASE(a_publisher_grant_works_once_its_exchange_exists) {
  auto token = grant_publisher("later", "");
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto req = other.client.getMain<rpc::Broker>().restorePublisherRequest();
  req.setToken(bytes(token));
  auto pub = req.send().getPublisher();  // pipelined: no union in the way

  for (int i = 0; i < 2; ++i) {  // each refusal names the exchange, none breaks the grant
    auto missing = failure_of([&] { message_to(pub, "", "k").send().wait(ows); });
    BOOST_TEST(code_of(missing) == "NOT_FOUND", missing);
    BOOST_TEST(missing.find("'later'") != std::string::npos, missing);
  }
  auto ex = ch.exchangeDeclareRequest();
  ex.setName("later");
  ex.setType("fanout");
  ex.send().wait(ws);
  declare_queue(*this, "later-q");
  auto bind = ch.queueBindRequest();
  bind.setQueue("later-q");
  bind.setExchange("later");
  bind.send().wait(ws);

  auto routed = message_to(pub, "", "k").send().wait(ows);
  BOOST_TEST((routed.getResult().getOutcome() == rpc::PublishResult::Outcome::ROUTED));
  BOOST_TEST(ready("later-q") == 1u);
}

BOOST_AUTO_TEST_CASE(a_consumer_grant_outlives_not_found_and_resource_locked) {
  auto token = grant_consumer("later-q");
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto req = other.client.getMain<rpc::Broker>().restoreConsumerRequest();
  req.setToken(bytes(token));
  auto qc = req.send().getConsumer();

  for (int i = 0; i < 2; ++i) {
    auto missing = failure_of([&] { qc.getRequest().send().wait(ows); });
    BOOST_TEST(code_of(missing) == "NOT_FOUND", missing);
  }
  declare_queue(*this, "later-q");
  publish_to_queue(*this, "later-q", 1);
  auto got = qc.getRequest().send().wait(ows);
  BOOST_REQUIRE(got.getResult().isDelivery());
  auto body = got.getResult().getDelivery().getBody();
  BOOST_TEST(std::string(body.asChars().begin(), body.size()) == "m0");

  // A queue exclusive to another connection: RESOURCE_LOCKED every time, never CHANNEL_ERROR.
  auto q = ch.queueDeclareRequest();
  q.setName("mine");
  q.setExclusive(true);
  q.send().wait(ws);
  token_holder third(node.port());
  auto locked_req = third.client.getMain<rpc::Broker>().restoreConsumerRequest();
  locked_req.setToken(bytes(grant_consumer("mine")));
  auto locked = locked_req.send().getConsumer();
  for (int i = 0; i < 2; ++i) {
    auto refused =
        failure_of([&] { locked.getRequest().send().wait(third.client.getWaitScope()); });
    BOOST_TEST(code_of(refused) == "RESOURCE_LOCKED", refused);
  }
}

BOOST_AUTO_TEST_CASE(a_token_opened_as_the_other_kind_is_refused_by_kind) {
  declare_orders();
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto as_publisher = other.client.getMain<rpc::Broker>().restorePublisherRequest();
  as_publisher.setToken(bytes(grant_consumer("eu")));
  auto refused = failure_of([&] { as_publisher.send().wait(ows); });
  BOOST_TEST(code_of(refused) == "PRECONDITION_FAILED", refused);
  BOOST_TEST(refused.find("restoreConsumer") != std::string::npos, refused);

  auto as_consumer = other.client.getMain<rpc::Broker>().restoreConsumerRequest();
  as_consumer.setToken(bytes(grant_publisher("orders", "")));
  refused = failure_of([&] { as_consumer.send().wait(ows); });
  BOOST_TEST(code_of(refused) == "PRECONDITION_FAILED", refused);
  BOOST_TEST(refused.find("restorePublisher") != std::string::npos, refused);

  auto wrong_length = other.client.getMain<rpc::Broker>().restorePublisherRequest();
  wrong_length.setToken(bytes("short"));
  BOOST_TEST(code_of(failure_of([&] { wrong_length.send().wait(ows); })) == "ACCESS_REFUSED");
}

BOOST_AUTO_TEST_CASE(a_consumer_grant_on_a_stream_starts_where_it_is_told) {
  declare_queue(*this, "events", "stream");
  publish_to_queue(*this, "events", 5);
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto restore = other.client.getMain<rpc::Broker>().restoreConsumerRequest();
  restore.setToken(bytes(grant_consumer("events")));
  auto qc = restore.send().getConsumer();

  consumer_log log;
  auto req = qc.consumeStreamRequest();
  req.initOffset().setOffset(2);
  req.setPrefetch(10);
  req.setConsumer(kj::heap<test_consumer>(log));
  req.send().wait(ows);
  warren::test::raw::pump_until(
      other.client, [&] { return log.delivered() == 3; }, "offsets 2, 3 and 4");
  std::vector<std::string> bodies;
  for (const auto& c : log.calls) bodies.insert(bodies.end(), c.bodies.begin(), c.bodies.end());
  BOOST_TEST((bodies == std::vector<std::string>{"m2", "m3", "m4"}));

  // A group's committed offset is the grantor's: a grant cannot join one.
  consumer_log other_log;
  auto grouped = qc.consumeStreamRequest();
  grouped.initOffset().setFirst();
  grouped.setGroup("billing");
  grouped.setPrefetch(10);
  grouped.setConsumer(kj::heap<test_consumer>(other_log));
  auto refused = failure_of([&] { grouped.send().wait(ows); });
  BOOST_TEST(code_of(refused) == "ACCESS_REFUSED", refused);
  BOOST_TEST(refused.find("'billing'") != std::string::npos, refused);
}

BOOST_AUTO_TEST_CASE(a_routing_key_pattern_is_a_routing_keys_size_at_most) {
  declare_orders();
  auto req = conn.grantPublisherRequest();
  req.setExchange("orders");
  std::string words;
  for (int i = 0; i < 200; ++i) words += "#.";
  req.setRoutingKeyPattern(words + "#");
  auto refused = failure_of([&] { req.send().wait(ws); });
  BOOST_TEST(code_of(refused) == "PRECONDITION_FAILED", refused);
  BOOST_TEST(refused.find("255") != std::string::npos, refused);
}

BOOST_AUTO_TEST_CASE(a_grant_on_the_default_exchange_publishes_by_queue_name) {
  declare_orders();
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto restore = other.client.getMain<rpc::Broker>().restorePublisherRequest();
  restore.setToken(bytes(grant_publisher("", "eu")));
  auto pub = restore.send().getPublisher();
  message_to(pub, "", "eu").send().wait(ows);
  BOOST_TEST(ready("eu") == 1u);
  auto elsewhere = failure_of([&] { message_to(pub, "orders", "eu").send().wait(ows); });
  BOOST_TEST(code_of(elsewhere) == "ACCESS_REFUSED", elsewhere);
  auto other_queue = failure_of([&] { message_to(pub, "", "other").send().wait(ows); });
  BOOST_TEST(code_of(other_queue) == "ACCESS_REFUSED", other_queue);
  BOOST_TEST(ready("other") == 0u);
}

BOOST_AUTO_TEST_CASE(an_empty_user_name_is_refused_by_name) {
  auto refused = failure_of([&] { login("", "guest").listQueuesRequest().send().wait(ws); });
  BOOST_TEST(code_of(refused) == "ACCESS_REFUSED", refused);
  BOOST_TEST(refused.find("user name is empty") != std::string::npos, refused);
}

BOOST_AUTO_TEST_SUITE_END()
