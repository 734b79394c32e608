// Capability grants against a real node: made by one connection, opened by token from another
// (raw Cap'n Proto calls, the C++ client, and warrenctl as a separate process), limited to what
// they grant, revoked and expired while in use, and kept across a kill -9.
#include <boost/test/unit_test.hpp>

#include "core/hex.hpp"
#include "grants_fixture.hpp"
#include "raw_rpc.hpp"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"
#include "warren/grants.hpp"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

using warren::test::command_result;
using warren::test::node_process;
using namespace warren::test::raw;
namespace raw = warren::test::raw;
namespace rpc = warren::rpc;

using namespace warren::test::grants;

BOOST_FIXTURE_TEST_SUITE(raw_calls, grants_fixture)

BOOST_AUTO_TEST_CASE(a_publisher_token_publishes_to_its_exchange_and_nothing_else) {
  declare_orders();
  auto token = grant_publisher("orders", "eu.#");
  BOOST_TEST(token.size() == 32u);
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto granted = other.restore(token);
  BOOST_REQUIRE(granted.getGranted().isPublisher());
  auto pub = granted.getGranted().getPublisher();

  auto routed = message_to(pub, "", "eu.paris").send().wait(ows);
  BOOST_TEST((routed.getResult().getOutcome() == rpc::PublishResult::Outcome::ROUTED));
  message_to(pub, "orders", "eu.rome").send().wait(ows);
  BOOST_TEST(ready("eu") == 2u);

  auto other_key = failure_of([&] { message_to(pub, "orders", "us.ny").send().wait(ows); });
  BOOST_TEST(code_of(other_key) == "ACCESS_REFUSED");
  BOOST_TEST(other_key.find("'us.ny'") != std::string::npos, other_key);
  auto other_exchange = failure_of([&] { message_to(pub, "amq.direct", "eu.x").send().wait(ows); });
  BOOST_TEST(code_of(other_exchange) == "ACCESS_REFUSED");
  BOOST_TEST(other_exchange.find("'orders' only") != std::string::npos, other_exchange);

  // One refused message fails the whole batch before any of it is published.
  auto batch = pub.publishBatchRequest();
  auto list = batch.initMessages(3);
  for (unsigned i = 0; i < 3; ++i) list[i].setRoutingKey(i == 2 ? "us.ny" : "eu.berlin");
  auto refused = failure_of([&] { batch.send().wait(ows); });
  BOOST_TEST(refused.find("message 2") != std::string::npos, refused);
  BOOST_TEST(ready("eu") == 2u);

  // The capability still works after refusals, and says what it is.
  message_to(pub, "", "eu.oslo").send().wait(ows);
  BOOST_TEST(ready("eu") == 3u);
  auto answer = pub.infoRequest().send().wait(ows);  // its reader needs it alive
  auto info = answer.getGrant();
  BOOST_TEST(text(info.getTarget()) == "orders");
  BOOST_TEST(text(info.getRoutingKeyPattern()) == "eu.#");
  BOOST_TEST((info.getKind() == rpc::GrantKind::PUBLISHER));
  BOOST_TEST(text(info.getUser()) == "guest");
  BOOST_TEST(info.getExpiresAt() == 0);
  BOOST_TEST(ready("other") == 0u);
}

BOOST_AUTO_TEST_CASE(a_consumer_token_consumes_and_settles_its_queue) {
  declare_orders();
  auto publisher = grant_publisher("orders", "");
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto pub = other.restore(publisher).getGranted().getPublisher();
  for (int i = 0; i < 10; ++i) message_to(pub, "", "eu." + std::to_string(i)).send().wait(ows);

  auto restored = other.restore(grant_consumer("eu"));  // its readers need it alive
  BOOST_REQUIRE(restored.getGranted().isConsumer());
  auto qc = restored.getGranted().getConsumer();
  auto got = qc.getRequest().send().wait(ows);
  BOOST_REQUIRE(got.getResult().isDelivery());
  auto ack = qc.ackRequest();
  ack.setDeliveryTag(got.getResult().getDelivery().getDeliveryTag());
  ack.send().wait(ows);

  consumer_log log;
  auto req = qc.consumeRequest();
  req.setPrefetch(100);
  req.setConsumer(kj::heap<test_consumer>(log));
  req.send().wait(ows);
  raw::pump_until(
      other.client, [&] { return log.delivered() == 9; }, "9 deliveries");
  auto each = qc.ackEachRequest();
  std::vector<uint64_t> tags;
  for (const auto& c : log.calls) tags.insert(tags.end(), c.tags.begin(), c.tags.end());
  auto list = each.initDeliveryTags(static_cast<unsigned>(tags.size()));
  for (unsigned i = 0; i < tags.size(); ++i) list.set(i, tags[i]);
  each.send().wait(ows);
  pump_until([&] { return ready("eu") == 0; }, "the queue is empty");
  auto listed = conn.listQueuesRequest().send().wait(ws);
  for (auto q : listed.getQueues())
    if (text(q.getName()) == "eu") BOOST_TEST(q.getMessagesUnacked() == 0u);
  // An unknown tag fails that call alone, as on a channel.
  auto bad = qc.ackRequest();
  bad.setDeliveryTag(999);
  BOOST_TEST(code_of(failure_of([&] { bad.send().wait(ows); })) == "PRECONDITION_FAILED");
  BOOST_TEST(qc.getRequest().send().wait(ows).getResult().isEmpty());
}

BOOST_AUTO_TEST_CASE(granting_needs_the_permission_granted_and_so_does_every_restore) {
  declare_orders();
  add_user("alice", "", "^orders$", "");
  auto alice = login("alice", "secret");

  auto to_eu = alice.grantConsumerRequest();
  to_eu.setQueue("eu");
  auto refused = failure_of([&] { to_eu.send().wait(ws); });
  BOOST_TEST(code_of(refused) == "ACCESS_REFUSED");
  BOOST_TEST(refused.find("read access to queue 'eu'") != std::string::npos, refused);
  auto to_direct = alice.grantPublisherRequest();
  to_direct.setExchange("amq.direct");
  BOOST_TEST(code_of(failure_of([&] { to_direct.send().wait(ws); })) == "ACCESS_REFUSED");

  auto to_orders = alice.grantPublisherRequest();
  to_orders.setExchange("orders");
  auto saved = to_orders.send().getPublisher().saveRequest().send().wait(ws);
  std::string token(reinterpret_cast<const char*>(saved.getToken().begin()),
                    saved.getToken().size());

  // Alice lists her own grant; guest (an administrator) lists every grant; alice may not
  // revoke guest's.
  auto guest_token = grant_consumer("eu");
  BOOST_TEST(alice.listGrantsRequest().send().wait(ws).getGrants().size() == 1u);
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 2u);
  auto revoke = alice.revokeGrantRequest();
  revoke.setToken(warren::to_hex(guest_token));
  BOOST_TEST(code_of(failure_of([&] { revoke.send().wait(ws); })) == "ACCESS_REFUSED");

  // Once alice may no longer write to "orders", her token opens nothing. (Clearing her
  // permissions would revoke it outright: a_deleted_user_or_cleared_permissions_... below.)
  token_holder other(node.port());
  other.restore(token);
  permit("alice", "", "^elsewhere$");
  auto gone = failure_of([&] { other.restore(token); });
  BOOST_TEST(code_of(gone) == "ACCESS_REFUSED");
  BOOST_TEST(gone.find("no longer holds") != std::string::npos, gone);
}

// Access taken away takes effect at once: clearing a user's permissions in a vhost closes their
// connections there and revokes the grants they made there; deleting the user does so
// everywhere. Nothing they opened keeps working, and their grants are no longer listed.
BOOST_AUTO_TEST_CASE(a_deleted_user_or_cleared_permissions_leave_nothing_usable) {
  declare_orders();
  for (auto name : {"alice", "bob"}) add_user(name, ".*", ".*", ".*");
  auto grant_as = [&](rpc::Connection::Client& who) {
    auto req = who.grantPublisherRequest();
    req.setExchange("orders");
    auto saved = req.send().getPublisher().saveRequest().send().wait(ws);
    return std::string(reinterpret_cast<const char*>(saved.getToken().begin()),
                       saved.getToken().size());
  };
  auto declare_on = [&](rpc::Connection::Client& who) {
    auto q = who.openChannelRequest().send().getChannel().queueDeclareRequest();
    q.setName("probe");
    q.send().wait(ws);
  };
  auto alice = login("alice", "secret");
  auto bob = login("bob", "secret");
  auto alice_token = grant_as(alice), bob_token = grant_as(bob);
  declare_on(alice);
  declare_on(bob);
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 2u);

  auto clear = conn.clearPermissionsRequest();
  clear.setUser("alice");
  clear.setVhost("/");
  clear.send().wait(ws);
  auto del = conn.deleteUserRequest();
  del.setName("bob");
  del.send().wait(ws);

  for (auto* who : {&alice, &bob}) {
    auto closed = failure_of([&] { declare_on(*who); });
    BOOST_TEST(!closed.empty());
  }
  token_holder other(node.port());
  for (const auto& token : {alice_token, bob_token}) {
    auto refused = failure_of([&] { other.restore(token); });
    BOOST_TEST(refused.find("no grant has this token") != std::string::npos, refused);
  }
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 0u);
  // Given back her permissions, alice logs in again as before.
  permit("alice", ".*");
  auto again = login("alice", "secret");
  declare_on(again);
}

BOOST_AUTO_TEST_CASE(revoking_cuts_a_consumer_and_a_publisher_off_mid_stream) {
  declare_orders();
  auto pub_token = grant_publisher("orders", "#");
  auto con_token = grant_consumer("eu");
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto pub = other.restore(pub_token).getGranted().getPublisher();
  auto qc = other.restore(con_token).getGranted().getConsumer();
  for (int i = 0; i < 20; ++i) message_to(pub, "", "eu.x").send().wait(ows);

  consumer_log log;
  log.hold = true;  // deliveries stay unacked, as work in progress
  auto req = qc.consumeRequest();
  req.setPrefetch(5);
  req.setConsumer(kj::heap<test_consumer>(log));
  req.send().wait(ows);
  raw::pump_until(
      other.client, [&] { return log.delivered() == 5; }, "5 deliveries");
  BOOST_TEST(ready("eu") == 15u);

  // Revoked by its prefix, as listed.
  auto listed = conn.listGrantsRequest().send().wait(ws);
  std::string prefix;
  for (auto g : listed.getGrants())
    if (g.getKind() == rpc::GrantKind::CONSUMER) prefix = text(g.getTokenPrefix());
  BOOST_TEST(prefix == warren::to_hex(con_token).substr(0, 8));
  auto revoke = conn.revokeGrantRequest();
  revoke.setToken(prefix);
  revoke.send().wait(ws);

  raw::pump_until(
      other.client, [&] { return !log.cancelled.empty(); }, "cancelled");
  BOOST_TEST(log.cancelled[0].find("revoked by 'guest'") != std::string::npos, log.cancelled[0]);
  auto after = failure_of([&] { qc.getRequest().send().wait(ows); });
  BOOST_TEST(code_of(after) == "CONNECTION_FORCED", after);
  // What the consumer held goes back to the queue.
  pump_until([&] { return ready("eu") == 20; }, "the unacked deliveries are requeued");
  BOOST_TEST(code_of(failure_of([&] { other.restore(con_token); })) == "ACCESS_REFUSED");

  // The publisher, revoked by its whole token, stops too; the consumer's revoke did not touch it.
  message_to(pub, "", "eu.x").send().wait(ows);
  auto whole = conn.revokeGrantRequest();
  whole.setToken(warren::to_hex(pub_token));
  whole.send().wait(ws);  // its connections were told to close before this returned
  auto stopped = failure_of([&] { message_to(pub, "", "eu.x").send().wait(ows); });
  BOOST_TEST(code_of(stopped) == "CONNECTION_FORCED", stopped);
  BOOST_TEST(ready("eu") == 21u);
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 0u);
}

BOOST_AUTO_TEST_CASE(an_expired_grant_closes_its_capabilities) {
  declare_orders();
  // Long enough that a busy machine (tests run in parallel, maybe under ASan) still opens the
  // grant's capability before it expires.
  auto token = grant_publisher("orders", "", 3);
  auto listed = conn.listGrantsRequest().send().wait(ws);
  BOOST_REQUIRE(listed.getGrants().size() == 1u);
  auto g = listed.getGrants()[0];
  BOOST_TEST(g.getExpiresAt() - g.getCreatedAt() == 3000);
  token_holder other(node.port());
  auto& ows = other.client.getWaitScope();
  auto pub = other.restore(token).getGranted().getPublisher();
  // Publishes work until the grant expires, then fail saying so.
  std::string failure;
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (failure.empty()) {
    BOOST_REQUIRE(std::chrono::steady_clock::now() < deadline);
    try {
      message_to(pub, "", "eu.x").send().wait(ows);
      other.client.getIoProvider().getTimer().afterDelay(20 * kj::MILLISECONDS).wait(ows);
    } catch (const kj::Exception& e) {
      failure = e.getDescription().cStr();
    }
  }
  BOOST_TEST(failure.find("CONNECTION_FORCED") != std::string::npos, failure);
  BOOST_TEST(failure.find("expired") != std::string::npos, failure);
  BOOST_TEST(code_of(failure_of([&] { other.restore(token); })) == "ACCESS_REFUSED");
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 0u);
}

BOOST_AUTO_TEST_CASE(bad_tokens_names_and_patterns_are_refused_clearly) {
  token_holder other(node.port());
  BOOST_TEST(code_of(failure_of([&] { other.restore(""); })) == "ACCESS_REFUSED");
  auto unknown = failure_of([&] { other.restore(std::string(32, 'x')); });
  BOOST_TEST(code_of(unknown) == "ACCESS_REFUSED");
  BOOST_TEST(unknown.find("no grant has this token") != std::string::npos, unknown);

  auto bad_pattern = conn.grantPublisherRequest();
  bad_pattern.setExchange("amq.topic");
  bad_pattern.setRoutingKeyPattern("eu*.x");
  BOOST_TEST(code_of(failure_of([&] { bad_pattern.send().wait(ws); })) == "PRECONDITION_FAILED");
  auto forever = conn.grantConsumerRequest();
  forever.setQueue("q");
  forever.setTtlSeconds(uint64_t{1} << 40);
  BOOST_TEST(code_of(failure_of([&] { forever.send().wait(ws); })) == "PRECONDITION_FAILED");
  auto no_queue = conn.grantConsumerRequest();
  BOOST_TEST(code_of(failure_of([&] { no_queue.send().wait(ws); })) == "PRECONDITION_FAILED");

  for (std::string name : {"xyz", "0123456", "zzzzzzzz", "12345678"}) {
    auto revoke = conn.revokeGrantRequest();
    revoke.setToken(name);
    auto d = failure_of([&] { revoke.send().wait(ws); });
    BOOST_TEST(code_of(d) == (name == "12345678" ? "NOT_FOUND" : "PRECONDITION_FAILED"), d);
  }
  // The connection that was refused all of that still works.
  BOOST_TEST(conn.listGrantsRequest().send().wait(ws).getGrants().size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(grants_and_revocations_survive_kill_9) {
  warren::test::temp_dir data;
  std::string kept, revoked;
  {
    grants_fixture f(data.path());
    f.declare_orders();
    kept = f.grant_consumer("eu");
    revoked = f.grant_publisher("orders", "");
    auto revoke = f.conn.revokeGrantRequest();
    revoke.setToken(warren::to_hex(revoked));
    revoke.send().wait(f.ws);
    f.node.kill9();
  }
  grants_fixture f(data.path());
  token_holder other(f.node.port());
  BOOST_TEST(other.restore(kept).getGranted().isConsumer());
  BOOST_TEST(code_of(failure_of([&] { other.restore(revoked); })) == "ACCESS_REFUSED");
  BOOST_TEST(f.conn.listGrantsRequest().send().wait(f.ws).getGrants().size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_cpp_client_restores_a_grant_as_a_channel_that_does_only_that) {
  node_process node;
  warren::client::connect_options options;
  options.port = node.port();
  auto conn = warren::client::connection::open(options);
  {
    auto ch = conn->open_channel();
    ch->queue_declare("jobs", {});
    ch->queue_declare("secrets", {});
  }
  auto pub_token = conn->grant_publisher("", "jobs");
  auto con_token = conn->grant_consumer("jobs", 3600);
  BOOST_TEST(pub_token.size() == 64u);
  auto rows = conn->list_grants();
  BOOST_REQUIRE(rows.size() == 2u);

  warren::client::connect_options anonymous;  // host and port only: no credentials used
  anonymous.port = node.port();
  anonymous.user = "nobody";
  anonymous.password = "wrong";
  auto publisher = warren::client::restore_grant(anonymous, pub_token);
  for (int i = 0; i < 5; ++i) {
    warren::client::outbound_message m;
    m.routing_key = "jobs";
    m.body = "job " + std::to_string(i);
    publisher->publish(m);
  }
  try {
    warren::client::outbound_message m;
    m.routing_key = "secrets";
    publisher->publish(m);
    BOOST_FAIL("published to a key the grant does not cover");
  } catch (const warren::client::error& e) {
    BOOST_TEST((e.kind() == warren::client::error_code::access_refused), e.what());
  }
  try {
    publisher->queue_declare("mine", {});
    BOOST_FAIL("a publisher grant declared a queue");
  } catch (const warren::client::error& e) {
    BOOST_TEST((e.kind() == warren::client::error_code::access_refused), e.what());
    BOOST_TEST(std::string(e.what()).find("publisher grant of exchange ''") != std::string::npos,
               e.what());
  }

  auto consumer = warren::client::restore_grant(anonymous, con_token);
  try {
    consumer->get("secrets");
    BOOST_FAIL("a consumer grant of 'jobs' got from 'secrets'");
  } catch (const warren::client::error& e) {
    BOOST_TEST((e.kind() == warren::client::error_code::access_refused), e.what());
  }
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> bodies;
  std::string cancelled;
  consumer->consume(
      "jobs", {},
      [&](const warren::client::delivery& d) {
        consumer->ack(d.delivery_tag);
        std::lock_guard<std::mutex> guard(mutex);
        bodies.push_back(d.body);
        changed.notify_all();
      },
      [&](const std::string&, const std::string& reason) {
        std::lock_guard<std::mutex> guard(mutex);
        cancelled = reason;
        changed.notify_all();
      });
  {
    std::unique_lock<std::mutex> lock(mutex);
    BOOST_REQUIRE(changed.wait_for(lock, patience, [&] { return bodies.size() == 5; }));
  }
  BOOST_TEST(bodies.front() == "job 0");
  conn->revoke_grant(con_token);
  std::unique_lock<std::mutex> lock(mutex);
  BOOST_REQUIRE(changed.wait_for(lock, patience, [&] { return !cancelled.empty(); }));
  BOOST_TEST(cancelled.find("revoked") != std::string::npos, cancelled);
}

BOOST_FIXTURE_TEST_CASE(warrenctl_grants_publishes_consumes_lists_and_revokes_by_token,
                        grants_fixture) {
  declare_orders();
  auto made = ctl({"grant", "publisher", "orders", "--key", "eu.*", "--ttl", "3600"});
  BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  auto token = made.out.substr(0, made.out.find('\n'));
  BOOST_TEST(token.size() == 64u);
  auto consumer = ctl({"grant", "consumer", "eu"});
  BOOST_REQUIRE_MESSAGE(consumer.exit_code == 0, consumer.err);
  auto consumer_token = consumer.out.substr(0, consumer.out.find('\n'));

  // A separate process with the token and nothing else.
  auto sent = ctl({"--token", token, "publish", "orders", "eu.paris", "--body", "bonjour"});
  BOOST_TEST(sent.exit_code == 0, sent.err);
  auto wrong_key = ctl({"--token", token, "publish", "orders", "us.ny", "--body", "hi"});
  BOOST_TEST(wrong_key.exit_code == 1);
  BOOST_TEST(wrong_key.err.find("ACCESS_REFUSED") != std::string::npos, wrong_key.err);
  // Another exchange is refused, naming the token's, and nothing goes out (not "dropped").
  auto wrong_exchange = ctl({"--token", token, "publish", "amq.topic", "eu.paris", "--body", "x"});
  BOOST_TEST(wrong_exchange.exit_code == 1);
  BOOST_TEST(wrong_exchange.err.find("exchange 'orders' only") != std::string::npos,
             wrong_exchange.err);
  BOOST_TEST(wrong_exchange.out.find("dropped") == std::string::npos, wrong_exchange.out);
  auto not_a_consumer = ctl({"--token", token, "get", "eu"});
  BOOST_TEST(not_a_consumer.exit_code == 1);
  BOOST_TEST(not_a_consumer.err.find("ACCESS_REFUSED") != std::string::npos, not_a_consumer.err);
  BOOST_TEST(ctl({"--token", token, "list", "queues"}).exit_code == 2);
  BOOST_TEST(ctl({"grant", "consumer", "eu", "--key", "x"}).exit_code == 2);

  auto got = ctl({"--token", consumer_token, "consume", "eu", "--count", "1"});
  BOOST_TEST(got.exit_code == 0, got.err);
  BOOST_TEST(got.out == "bonjour\n");

  auto listed = ctl({"--json", "list", "grants"});
  BOOST_REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
  auto rows = nlohmann::json::parse(listed.out);
  BOOST_REQUIRE(rows.size() == 2u);
  for (const auto& row : rows) {
    BOOST_TEST(row["token_prefix"].get<std::string>().size() == 8u);
    if (row["kind"] == "publisher") {
      BOOST_TEST(row["target"] == "orders");
      BOOST_TEST(row["routing_key_pattern"] == "eu.*");
      BOOST_TEST(row["expires_at"].is_string());
      BOOST_TEST(row["token_prefix"] == token.substr(0, 8));
    } else {
      BOOST_TEST(row["target"] == "eu");
      BOOST_TEST(row["expires_at"].is_null());
    }
  }

  BOOST_TEST(ctl({"revoke-grant", token}).exit_code == 0);
  auto after = ctl({"--token", token, "publish", "orders", "eu.paris", "--body", "again"});
  BOOST_TEST(after.exit_code == 1);
  BOOST_TEST(after.err.find("ACCESS_REFUSED") != std::string::npos, after.err);
  auto twice = ctl({"revoke-grant", token});
  BOOST_TEST(twice.exit_code == 1);
  BOOST_TEST(twice.err.find("NOT_FOUND") != std::string::npos, twice.err);
}
