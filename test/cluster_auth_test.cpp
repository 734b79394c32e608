// The proofs nodes exchange to show they hold the cluster secret, and cluster addresses.
#define BOOST_TEST_MODULE cluster_auth
#include "actors/cluster_auth.hpp"

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
