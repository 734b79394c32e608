// The connection and vhost actors driven one message at a time by CAF's test_coordinator: no
// worker threads, so a test decides exactly when each answer arrives (an exchange lookup after
// a close, a queue's confirm before the exchange's count, a commit that fails) and checks the
// order of what the actor then does.
#include <boost/test/unit_test.hpp>

#include "actors/common/broker_error.hpp"
#include "actors/connection/connection_actor.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/vhost/vhost_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

using namespace warren;

namespace {

// What the connection actor told its front door, in order.
class recording_link : public client_link {
 public:
  struct answer {
    uint64_t request;
    broker_failure failure;  // when not ok
    bool ok;
    request_answer answer;
  };
  std::vector<answer> answers;

  void reply(uint64_t request, caf::error error, request_answer answer) override {
    answers.push_back({request, error ? describe(error) : broker_failure{}, !error, answer});
  }
  void deliver(uint16_t, const std::string&, std::vector<delivery>) override {}
  void consumer_cancelled(uint16_t, const std::string&, const std::string&) override {}
  void channel_closed(uint16_t, uint64_t, const broker_failure&) override {}
  void connection_closed(const broker_failure&) override {}

  std::vector<uint64_t> requests() const {
    std::vector<uint64_t> out;
    for (const auto& a : answers) out.push_back(a.request);
    return out;
  }
};

// Answers a test holds back: the promises, and what the actor asked. A promise is delivered
// inside its actor (CAF delivers through the actor's own context): the test queues the
// delivery and sends the fake a tick.
struct held {
  std::vector<caf::response_promise> promises;
  std::vector<caf::message> asked;
  std::vector<std::function<void()>> to_deliver;

  void run_deliveries() {
    for (auto& f : std::exchange(to_deliver, {})) f();
  }
};

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system system;
  caf::scheduler::test_coordinator& sched;

  fixture()
      : system((cfg.set("scheduler.policy", caf::atom("testing")), cfg)),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(system.scheduler())) {}

  ~fixture() { sched.run(); }

  // Runs every actor until no messages are left.
  void settle() { sched.run(); }

  // Delivers `h`'s promise `i` with `xs...` from inside `fake`, then runs everything.
  template <class... Ts>
  void answer(const caf::actor& fake, const std::shared_ptr<held>& h, size_t i, Ts... xs) {
    h->to_deliver.push_back([h, i, xs...]() mutable { h->promises.at(i).deliver(xs...); });
    caf::anon_send(fake, tick_atom::value);
    settle();
  }
};

// --- the connection actor ----------------------------------------------------------------------

struct connection_fixture : fixture {
  std::shared_ptr<recording_link> link = std::make_shared<recording_link>();
  std::shared_ptr<held> lookups = std::make_shared<held>();
  std::shared_ptr<held> routes = std::make_shared<held>();
  caf::actor exchange;
  caf::actor vhost;
  caf::actor node;
  connection_ref conn;

  connection_fixture() {
    auto routed = routes;
    exchange = system.spawn([routed](caf::event_based_actor* self) -> caf::behavior {
      return {[=](publish_atom, publish_batch& batch) {
                routed->asked.push_back(caf::make_message(std::move(batch)));
                routed->promises.push_back(self->make_response_promise());
                return routed->promises.back();
              },
              [=](tick_atom) { routed->run_deliveries(); }};
    });
    auto looked = lookups;
    vhost = system.spawn([looked](caf::event_based_actor* self) -> caf::behavior {
      return {[=](find_atom, exchanges_atom, const std::string& name) {
                looked->asked.push_back(caf::make_message(name));
                looked->promises.push_back(self->make_response_promise());
                return looked->promises.back();
              },
              [=](tick_atom) { looked->run_deliveries(); }};
    });
    auto v = vhost;
    node = system.spawn([v](caf::event_based_actor*) -> caf::behavior {
      return {[=](connect_atom, const client_hello& hello, const caf::actor&)
                  -> caf::result<caf::actor, connection_settings, permission_record, grant_record> {
        return {v, connection_settings{}, permission_record{hello.user, "/", ".*", ".*", ".*"},
                grant_record{}};
      }};
    });
    client_hello hello{"/", "guest", "guest", "steps", "127.0.0.1:1", true};
    conn = connection_ref(system.spawn(connection_actor, node, link, hello));
    conn.open(1);
    settle();  // logged in (a front door waits for that before opening channels)
    conn.open_channel(2, 1);
    settle();
    BOOST_REQUIRE_EQUAL(link->answers.size(), 2u);
  }

  ~connection_fixture() {
    caf::anon_send_exit(conn.actor(), caf::exit_reason::user_shutdown);
    for (const auto& fake : {exchange, vhost, node})
      caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
    lookups->promises.clear();
    routes->promises.clear();
  }

  static std::vector<message_ptr> one_message(const std::string& exchange, uint64_t n = 1) {
    std::vector<message_ptr> msgs;
    for (uint64_t i = 0; i < n; ++i) {
      auto m = std::make_shared<message>();
      m->id = next_message_id();
      m->exchange = exchange;
      m->routing_key = "k";
      m->body = "body";
      msgs.push_back(std::move(m));
    }
    return msgs;
  }

  // The publish batches the exchange received so far.
  publish_batch batch(size_t i) { return routes->asked.at(i).get_as<publish_batch>(0); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(connection_steps, connection_fixture)

BOOST_AUTO_TEST_CASE(a_close_waits_for_a_lookup_then_routes_first_and_fails_the_unconfirmed) {
  conn.publish(3, 1, one_message("x"));
  settle();
  BOOST_REQUIRE_EQUAL(lookups->asked.size(), 1u);  // the vhost is asked for "x"
  conn.close_channel(4, 1);
  settle();
  BOOST_TEST(link->answers.size() == 2u);  // the close waits for the publish accepted before it
  BOOST_TEST(routes->asked.empty());
  answer(vhost, lookups, 0, exchange, false);
  // The publish was routed (it was accepted before the close), then the close failed it, as
  // its confirm is still out, and only then was the close answered.
  BOOST_REQUIRE_EQUAL(routes->asked.size(), 1u);
  // Each request is answered once: the close, too (it used to be answered twice).
  BOOST_TEST(link->requests() == (std::vector<uint64_t>{1, 2, 3, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(!link->answers[2].ok);
  BOOST_TEST((link->answers[2].failure.code == reply_code::channel_error));
  BOOST_TEST(link->answers[3].ok);
}

BOOST_AUTO_TEST_CASE(a_queue_confirm_before_the_exchange_count_is_held_until_the_count) {
  conn.publish(3, 1, one_message("x", 2));
  settle();
  answer(vhost, lookups, 0, exchange, false);
  auto b = batch(0);
  BOOST_REQUIRE_EQUAL(b.items.size(), 2u);
  // A fast queue confirms both messages before the exchange has answered.
  caf::anon_send(caf::actor_cast<connection_broker_api>(conn.actor()), confirm_atom::value,
                 uint16_t{1}, std::vector<uint64_t>{b.items[0].seq, b.items[1].seq},
                 std::vector<uint64_t>{});
  settle();
  BOOST_TEST(link->answers.size() == 2u);
  answer(exchange, routes, 0, std::vector<uint32_t>{1, 0});  // the second went nowhere
  BOOST_REQUIRE_EQUAL(link->answers.size(), 3u);
  BOOST_TEST(link->answers[2].request == 3u);
  auto outcomes = answer_as<std::vector<publish_outcome>>(link->answers[2].answer);
  BOOST_TEST((outcomes ==
              std::vector<publish_outcome>{publish_outcome::routed, publish_outcome::dropped}));
}

BOOST_AUTO_TEST_CASE(publishes_keep_their_order_across_a_lookup) {
  conn.publish(3, 1, one_message("x"));
  conn.publish(4, 1, one_message("x"));
  settle();
  BOOST_REQUIRE_EQUAL(lookups->asked.size(), 1u);  // one lookup serves both
  answer(vhost, lookups, 0, exchange, false);
  BOOST_REQUIRE_EQUAL(routes->asked.size(), 2u);
  BOOST_TEST(batch(0).items[0].seq < batch(1).items[0].seq);
  answer(exchange, routes, 1, std::vector<uint32_t>{0});
  answer(exchange, routes, 0, std::vector<uint32_t>{0});
  // Answered as each completes: the second call's outcome was known first.
  BOOST_TEST(link->requests() == (std::vector<uint64_t>{1, 2, 4, 3}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// --- the vhost actor ---------------------------------------------------------------------------

namespace {

struct vhost_fixture : fixture {
  std::shared_ptr<held> commits = std::make_shared<held>();
  caf::actor persistence;
  vhost_actor_type vhost;

  vhost_fixture() {
    auto c = commits;
    persistence = system.spawn([c](caf::event_based_actor* self) -> caf::behavior {
      return {[=](persist_atom, std::vector<persistence::meta_mutation>& batch) {
                c->asked.push_back(caf::make_message(std::move(batch)));
                c->promises.push_back(self->make_response_promise());
                return c->promises.back();
              },
              [=](tick_atom) { c->run_deliveries(); }};
    });
    storage_context storage;
    storage.persistence = persistence;  // no data dir: queues keep messages in memory
    vhost = system.spawn(vhost_actor, "/", storage, vhost_recovery{});
    settle();
  }

  ~vhost_fixture() {
    caf::anon_send_exit(vhost, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(persistence, caf::exit_reason::user_shutdown);
    commits->promises.clear();
  }
};

struct answers {
  std::vector<std::string> got;  // "ok" or the failure's code name
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(vhost_steps, vhost_fixture)

BOOST_AUTO_TEST_CASE(a_durable_declare_is_answered_once_its_record_is_committed) {
  auto seen = std::make_shared<answers>();
  auto asker = system.spawn([=](caf::event_based_actor* self) {
    auto q = [](const std::string& name) { return queue_spec{name, true, false, false, {}, {}}; };
    for (const auto* name : {"stored", "lost"})
      self->request(vhost, caf::infinite, declare_atom::value, q(name), false, caf::actor{})
          .then([=](const queue_info&) { seen->got.push_back("ok"); },
                [=](caf::error& err) { seen->got.push_back(reply_code_name(describe(err).code)); });
  });
  settle();
  BOOST_REQUIRE_EQUAL(commits->asked.size(), 2u);  // one record each
  BOOST_TEST(seen->got.empty());                   // nothing answered before its commit
  answer(persistence, commits, 0, caf::unit);
  answer(persistence, commits, 1, make_broker_error(reply_code::internal_error, "disk gone"));
  BOOST_TEST((seen->got == std::vector<std::string>{"ok", "INTERNAL_ERROR"}));
  caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_transient_declare_writes_nothing_and_is_answered_at_once) {
  auto seen = std::make_shared<answers>();
  auto asker = system.spawn([=](caf::event_based_actor* self) {
    self->request(vhost, caf::infinite, declare_atom::value,
                  queue_spec{"t", false, false, false, {}, {}}, false, caf::actor{})
        .then([=](const queue_info& info) { seen->got.push_back(info.spec.name); },
              [=](caf::error&) { seen->got.push_back("error"); });
  });
  settle();
  BOOST_TEST(commits->asked.empty());
  BOOST_TEST((seen->got == std::vector<std::string>{"t"}));
  caf::anon_send_exit(asker, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
