// The cluster's pure parts: the proofs nodes exchange to show they hold the cluster secret,
// cluster addresses, and a vhost's record of queues living on other nodes.
#define BOOST_TEST_MODULE cluster_parts
#include "actors/cluster_auth.hpp"
#include "actors/remote_queues.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>

#include <boost/test/unit_test.hpp>

using namespace warren;

BOOST_AUTO_TEST_CASE(a_proof_depends_on_secret_purpose_nonce_and_name) {
  auto nonce = make_nonce();
  auto proof = cluster_proof("s3cret", "join", nonce, "a");
  BOOST_CHECK_EQUAL(proof.size(), 64u);  // hex SHA-256
  BOOST_CHECK(proofs_equal(proof, cluster_proof("s3cret", "join", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cres", "join", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "welcome", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "join", make_nonce(), "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "join", nonce, "b")));
  BOOST_CHECK(!proofs_equal(proof, ""));
  BOOST_CHECK(!proofs_equal("", ""));
}

BOOST_AUTO_TEST_CASE(nonces_are_not_repeated) {
  auto a = make_nonce();
  BOOST_CHECK_EQUAL(a.size(), 32u);
  BOOST_CHECK_NE(a, make_nonce());
}

BOOST_AUTO_TEST_CASE(addresses_are_host_and_port) {
  std::string host, error;
  uint16_t port = 0;
  BOOST_CHECK(split_address("10.0.0.2:25680", host, port, error));
  BOOST_CHECK_EQUAL(host, "10.0.0.2");
  BOOST_CHECK_EQUAL(port, 25680);
  BOOST_CHECK(split_address("node-b.example:1", host, port, error));
  BOOST_CHECK_EQUAL(host, "node-b.example");
  for (const char* bad : {"node-b", ":25680", "node-b:", "node-b:0", "node-b:65536", "b:12x"}) {
    BOOST_CHECK_MESSAGE(!split_address(bad, host, port, error), bad);
    BOOST_CHECK_MESSAGE(error.find(bad) != std::string::npos, error);
  }
}

namespace {

caf::behavior idle(caf::event_based_actor*) {
  return {[](int) {}};
}

queue_placement placed(const std::string& name, const std::string& node, caf::actor queue) {
  queue_placement p;
  p.vhost = "/";
  p.spec.name = name;
  p.node = node;
  p.queue = std::move(queue);
  return p;
}

}  // namespace

BOOST_AUTO_TEST_CASE(remote_queues_keep_their_route_id_while_their_node_comes_and_goes) {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto q1 = system.spawn(idle), q1_again = system.spawn(idle), q2 = system.spawn(idle);
  remote_queues rq;
  auto first = rq.place(placed("orders", "a", q1));
  BOOST_REQUIRE(first);
  BOOST_CHECK(first->id & remote_id_bit);
  BOOST_CHECK(!rq.place(placed("orders", "a", q1)));  // announced twice: nothing to rebind
  auto other = rq.place(placed("audit", "b", q2));
  BOOST_REQUIRE(other);
  BOOST_CHECK_NE(other->id, first->id);

  auto down = rq.node_gone("a", true);
  BOOST_REQUIRE_EQUAL(down.size(), 1u);
  BOOST_CHECK(down[0].queue == q1);  // as it was, for its routes to be dropped
  BOOST_REQUIRE(rq.find("orders"));
  BOOST_CHECK(!rq.find("orders")->queue);                 // known, unreachable
  auto back = rq.place(placed("orders", "a", q1_again));  // its node restarted
  BOOST_REQUIRE(back);
  BOOST_CHECK_EQUAL(back->id, first->id);
  BOOST_CHECK(back->queue == q1_again);

  BOOST_CHECK(!rq.remove("orders", "b"));  // only its home node removes it
  BOOST_CHECK(rq.remove("orders", "a"));
  BOOST_CHECK(!rq.find("orders"));
  BOOST_CHECK_EQUAL(rq.node_gone("b", false).size(), 1u);  // forgotten: gone for good
  BOOST_CHECK(rq.all().empty());
  for (auto& a : {q1, q1_again, q2}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}
