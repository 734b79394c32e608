// The connection actor against scoped actors standing in for the node and the vhost, and a
// recording client link, so a test decides exactly when each answer arrives.
#include <boost/test/unit_test.hpp>

#include "actors/common/broker_error.hpp"
#include "actors/connection/connection_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <condition_variable>
#include <mutex>

using namespace warren;

namespace {

// Only a guard against a hung test, never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

// What the connection actor told its front door.
class recording_link : public client_link {
 public:
  void reply(uint64_t request, caf::error error, request_answer) override {
    std::lock_guard<std::mutex> guard(mutex_);
    replies_[request] = std::move(error);
    changed_.notify_all();
  }
  void deliver(uint16_t, const std::string&, std::vector<delivery>) override {}
  void consumer_cancelled(uint16_t, const std::string&, const std::string&) override {}
  void channel_closed(uint16_t channel, uint64_t serial, const broker_failure&) override {
    std::lock_guard<std::mutex> guard(mutex_);
    closed_.emplace_back(channel, serial);
  }
  void connection_closed(const broker_failure&) override {}

  /// The answer to `request` (no error on success); fails the test if none comes.
  caf::error answer(uint64_t request) {
    std::unique_lock<std::mutex> lock(mutex_);
    bool came = changed_.wait_for(lock, patience, [&] { return replies_.count(request) != 0; });
    BOOST_REQUIRE_MESSAGE(came, "no answer to request " << request);
    return replies_[request];
  }

  std::vector<std::pair<uint16_t, uint64_t>> closed_channels() {
    std::lock_guard<std::mutex> guard(mutex_);
    return closed_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, caf::error> replies_;
  std::vector<std::pair<uint16_t, uint64_t>> closed_;
};

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  caf::scoped_actor node{system};
  caf::scoped_actor vhost{system};
  std::shared_ptr<recording_link> link = std::make_shared<recording_link>();
  connection_ref conn;

  // A connection logged in to the vhost with every permission.
  fixture() {
    client_hello hello;
    hello.user = "guest";
    hello.vhost = "/";
    conn = connection_ref(system.spawn(connection_actor, caf::actor{node}, link, hello));
    conn.open(1);
    node->receive(
        [&](connect_atom, const client_hello&, const caf::actor&)
            -> caf::result<caf::actor, connection_settings, permission_record, grant_record> {
          return {caf::actor{vhost}, connection_settings{},
                  permission_record{"guest", "/", ".*", ".*", ".*"}, grant_record{}};
        },
        caf::after(patience) >> [] { BOOST_FAIL("the connection never asked the node"); });
    BOOST_REQUIRE(!link->answer(1));
  }

  ~fixture() { caf::anon_send_exit(conn.actor(), caf::exit_reason::user_shutdown); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(connection_actor_tests, fixture)

// A consume whose queue lookup fails after the client closed its channel and opened the same
// channel number again must not touch the new channel.
BOOST_AUTO_TEST_CASE(a_late_consume_failure_leaves_a_reopened_channel_alone) {
  conn.open_channel(2, 1);
  BOOST_REQUIRE(!link->answer(2));
  consume_request c;
  c.queue = "missing";
  conn.consume(3, 1, c);

  caf::response_promise lookup;
  vhost->receive(
      [&](find_atom, queues_atom, const std::string&,
          const caf::actor&) -> caf::result<caf::actor> {
        lookup = vhost->make_response_promise();
        return lookup;
      },
      caf::after(patience) >> [] { BOOST_FAIL("the connection never looked the queue up"); });

  // Closed and opened again while the lookup is under way.
  conn.close_channel(4, 1);
  BOOST_REQUIRE(!link->answer(4));
  conn.open_channel(5, 1);
  BOOST_REQUIRE(!link->answer(5));

  lookup.deliver(make_broker_error(reply_code::not_found, "no queue 'missing'"));
  BOOST_TEST(static_cast<bool>(link->answer(3)));  // the consume failed

  // The reopened channel still works, and no close reached the front door for it.
  conn.qos(6, 1, 10);
  auto qos = link->answer(6);
  BOOST_TEST(!static_cast<bool>(qos), (qos ? to_string(describe(qos)) : std::string()));
  BOOST_TEST(link->closed_channels().empty());
}

BOOST_AUTO_TEST_SUITE_END()
