// Who may talk to a node's cluster port. With TLS (what cluster tests use), a peer without a
// certificate from the cluster's CA is turned away before any of its bytes reach an actor, and
// the refusal is logged with its address. Without TLS the port listens on loopback only, and the
// cluster actor still takes nothing but hello and join from a node that has not joined. Run
// against real nodes with cluster_intruder, a program built as an attacker would build it.
#include <boost/test/unit_test.hpp>

#include "certificates.hpp"
#include "cluster_nodes.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace warren::test;
using namespace warren::test::cluster;

namespace {

command_result intrude(uint16_t port, std::vector<std::string> tls = {}) {
  std::vector<std::string> argv{"/usr/bin/timeout", "60", CLUSTER_INTRUDER_PATH, "127.0.0.1",
                                std::to_string(port)};
  argv.insert(argv.end(), tls.begin(), tls.end());
  auto r = run_command(argv);
  BOOST_TEST_MESSAGE("intruder: " << r.out << r.err);
  return r;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Polls (a minute at most) until `node` logged `what` at least `n` times.
bool logged_times(const node_process& node, const std::string& what, size_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (count_of(node.log(), what) < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// What an intruder would change: the users and the vhosts, as the node lists them.
std::string users_and_vhosts(const node_process& node) {
  return warrenctl_json(node, {"list-users"}).dump() +
         warrenctl_json(node, {"list-permissions"}).dump() +
         warrenctl_json(node, {"list", "vhosts"}).dump();
}

// warren-node with `args` and a cluster port, which should not start.
command_result refused_start(std::vector<std::string> args) {
  temp_dir dir;
  args.insert(args.begin(), {"--cluster-port", std::to_string(free_port())});
  return run_node(dir.path(), args);
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_outsider_without_the_cluster_ca_reaches_no_actor_and_is_logged) {
  uint16_t pa = free_port();
  node_process a(cluster_args("a", pa));
  connect(a)->open_channel()->queue_declare("kept", {});
  auto before = users_and_vhosts(a);

  // In the clear, and over TLS with a certificate some other CA signed.
  certificates rogue;
  for (const auto& tls : {std::vector<std::string>{},
                          {rogue.path("server.pem"), rogue.path("server.key"),
                           shared_certificates().path("ca.pem")}}) {
    auto r = intrude(pa, tls);
    BOOST_CHECK_MESSAGE(r.out.find("connect: refused") != std::string::npos, r.out + r.err);
    BOOST_CHECK(r.out.find("sent:") == std::string::npos);
  }
  BOOST_CHECK(a.wait_for_log("refused 127.0.0.1:"));
  BOOST_CHECK(logged_times(a, "on the cluster port: TLS handshake failed", 2));
  BOOST_CHECK_EQUAL(users_and_vhosts(a), before);
  BOOST_CHECK_EQUAL(home_of(a, "kept"), "a");
  BOOST_CHECK(logs_in(a, "guest", "guest", "/"));
  BOOST_CHECK(!logs_in(a, "intruder", "anything", "/"));
}

BOOST_AUTO_TEST_CASE(without_tls_the_cluster_actor_takes_nothing_from_a_node_that_did_not_join) {
  uint16_t pa = free_port();
  node_process a(
      {"--cluster-port", std::to_string(pa), "--node-name", "a", "--cluster-secret", secret});
  BOOST_REQUIRE(a.wait_for_log("(loopback, no TLS)"));
  BOOST_REQUIRE(a.wait_for_log("metadata log seeded"));  // it would commit what it is given
  connect(a)->open_channel()->queue_declare("kept", {});
  auto before = users_and_vhosts(a);

  auto r = intrude(pa);
  BOOST_REQUIRE_MESSAGE(r.out.find("sent:") != std::string::npos, r.out + r.err);
  BOOST_CHECK(a.wait_for_log("refused a 'metadata view' message from"));
  BOOST_CHECK(logged_times(a, "refused a 'replicate' message from", 2));
  BOOST_CHECK(logged_times(a, "refused a 'propose' message from", 5));
  BOOST_CHECK_EQUAL(users_and_vhosts(a), before);
  BOOST_CHECK_EQUAL(home_of(a, "kept"), "a");
  BOOST_CHECK(!logs_in(a, "intruder", "anything", "/"));
}

BOOST_AUTO_TEST_CASE(a_cluster_port_beyond_loopback_needs_tls) {
  auto r = refused_start({"--cluster-secret", secret, "--cluster-bind", "0.0.0.0"});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(
      r.err.find("--cluster-bind 0.0.0.0 is not a loopback address") != std::string::npos, r.err);
  const auto& certs = shared_certificates();
  r = refused_start({"--cluster-secret", secret, "--cluster-tls-cert", certs.path("server.pem")});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(r.err.find("needs --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca "
                                 "together") != std::string::npos,
                      r.err);
  // A key that is not the certificate's, named before anything listens.
  r = refused_start({"--cluster-secret", secret, "--cluster-tls-cert", certs.path("server.pem"),
                     "--cluster-tls-key", certs.path("client.key"), "--cluster-tls-ca",
                     certs.path("ca.pem")});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(r.err.find("is not the key of --cluster-tls-cert") != std::string::npos,
                      r.err);
  // Without TLS, other nodes are joined on loopback only.
  r = refused_start({"--cluster-secret", secret, "--join", "192.0.2.1:25680"});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(
      r.err.find("--join 192.0.2.1:25680 is not a loopback address") != std::string::npos, r.err);
  r = refused_start({"--cluster-tls-ca", certs.path("ca.pem")});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(r.err.find("need a cluster secret") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(the_secret_comes_from_a_file_or_the_environment_not_only_the_command_line) {
  temp_dir dir;
  std::ofstream(dir.path() + "/secret") << secret << "\n";
  std::ofstream(dir.path() + "/empty") << "\n";
  std::ofstream(dir.path() + "/shared") << secret << "\n";
  chmod((dir.path() + "/secret").c_str(), 0600);
  chmod((dir.path() + "/empty").c_str(), 0600);
  chmod((dir.path() + "/shared").c_str(), 0644);
  auto shared = refused_start({"--cluster-secret-file", dir.path() + "/shared"});
  BOOST_CHECK_EQUAL(shared.exit_code, 1);
  BOOST_CHECK_MESSAGE(shared.err.find("readable by others than its owner") != std::string::npos,
                      shared.err);
  auto r = refused_start({"--cluster-secret-file", dir.path() + "/empty"});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(r.err.find("/empty: empty") != std::string::npos, r.err);
  r = refused_start({"--cluster-secret-file", dir.path() + "/secret", "--cluster-secret", "x"});
  BOOST_CHECK_EQUAL(r.exit_code, 1);
  BOOST_CHECK_MESSAGE(r.err.find("both give the secret") != std::string::npos, r.err);

  // a reads the secret from a file, b from WARREN_CLUSTER_SECRET: they join each other.
  auto without_secret = [](std::vector<std::string> args) {
    auto flag = std::find(args.begin(), args.end(), "--cluster-secret");
    args.erase(flag, flag + 2);
    return args;
  };
  uint16_t pa = free_port(), pb = free_port();
  auto a_args = without_secret(cluster_args("a", pa));
  a_args.insert(a_args.end(), {"--cluster-secret-file", dir.path() + "/secret"});
  node_process a(a_args);
  setenv("WARREN_CLUSTER_SECRET", secret.c_str(), 1);
  node_process b(without_secret(cluster_args("b", pb, address(pa))));
  unsetenv("WARREN_CLUSTER_SECRET");
  BOOST_CHECK(sees(a, {{"a", true}, {"b", true}}));
  BOOST_CHECK(sees(b, {{"a", true}, {"b", true}}));
}

BOOST_AUTO_TEST_CASE(a_node_whose_certificate_another_ca_signed_cannot_join) {
  uint16_t pa = free_port();
  node_process a(cluster_args("a", pa));
  certificates other;
  auto args = cluster_args("b", free_port(), address(pa));
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--cluster-tls-cert") args[i + 1] = other.path("server.pem");
    if (args[i] == "--cluster-tls-key") args[i + 1] = other.path("server.key");
    if (args[i] == "--cluster-tls-ca") args[i + 1] = other.path("ca.pem");
  }
  // b keeps trying to join (an unreachable node is retried) and never becomes ready.
  temp_dir dir;
  auto r = run_node(dir.path(), args, 8);
  BOOST_CHECK_MESSAGE(r.exit_code == 124, "b did not stop on the TERM (" << r.exit_code << ")");
  BOOST_CHECK_MESSAGE(r.err.find("ready on") == std::string::npos, r.err);
  BOOST_CHECK_MESSAGE(r.err.find("cannot reach " + address(pa)) != std::string::npos, r.err);
  BOOST_CHECK(a.wait_for_log("on the cluster port: TLS handshake failed"));
  BOOST_CHECK((members_seen_by(a) == std::map<std::string, bool>{{"a", true}}));
}

// CAF's OpenSSL module reads the certificate files again for every connection and would throw in
// its network thread if one went bad meanwhile (a rotation that truncates the key): the node
// hands it private copies instead, so what happens to the originals cannot take it down.
BOOST_AUTO_TEST_CASE(a_certificate_file_changed_after_the_start_does_not_take_the_node_down) {
  certificates own;  // files of this test's own, to spoil
  uint16_t pa = free_port();
  std::vector<std::string> args{"--cluster-port",     std::to_string(pa),
                                "--node-name",        "a",
                                "--cluster-secret",   secret,
                                "--cluster-tls-cert", own.path("server.pem"),
                                "--cluster-tls-key",  own.path("server.key"),
                                "--cluster-tls-ca",   own.path("ca.pem")};
  node_process a(args);
  std::ofstream(own.path("server.key"), std::ios::trunc) << "-----BEGIN PRIVATE KEY-----\n";
  auto r = intrude(pa);
  BOOST_CHECK_MESSAGE(r.out.find("connect: refused") != std::string::npos, r.out + r.err);
  BOOST_CHECK(a.wait_for_log("refused 127.0.0.1:"));
  BOOST_CHECK(a.alive());
  BOOST_CHECK(logs_in(a, "guest", "guest", "/"));
}
