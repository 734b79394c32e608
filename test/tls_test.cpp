// TLS on both doors against real nodes: certificates made here with openssl, pika over AMQPS,
// warrenctl over Cap'n Proto TLS, client certificates, handshake timeouts and bad files.
#include <boost/test/unit_test.hpp>

#include "certificates.hpp"
#include "raw_socket.hpp"
#include "subprocess.hpp"

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

using warren::test::certificates;
using warren::test::command_result;
using warren::test::free_port;
using warren::test::node_process;
using warren::test::run_command;
using warren::test::temp_dir;

namespace {

const std::string pika_script = std::string(WARREN_SOURCE_DIR) + "/test/amqp/pika_tls.py";

// A node with both TLS listeners on free ports; `more` adds flags (--tls-ca, timeouts).
struct tls_node {
  uint16_t amqps_port = free_port();
  uint16_t tls_port = free_port();
  node_process node;

  tls_node(const certificates& certs, std::vector<std::string> more = {})
      : node(args(certs, std::move(more))) {}

  std::vector<std::string> args(const certificates& certs, std::vector<std::string> more) const {
    std::vector<std::string> out{
        "--tls-cert",   certs.path("server.pem"),   "--tls-key",  certs.path("server.key"),
        "--amqps-port", std::to_string(amqps_port), "--tls-port", std::to_string(tls_port)};
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }
};

command_result warrenctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{WARRENCTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

command_result pika(uint16_t port, const std::string& ca, const std::string& cert = {},
                    const std::string& key = {}) {
  std::vector<std::string> argv{PYTHON3_PATH, pika_script, std::to_string(port), ca};
  if (!cert.empty()) argv.insert(argv.end(), {cert, key});
  return run_command(argv);
}

}  // namespace

BOOST_AUTO_TEST_CASE(warrenctl_over_tls_checks_the_node_certificate) {
  certificates certs;
  tls_node n(certs);
  auto port = std::to_string(n.tls_port);
  auto ca = certs.path("ca.pem");
  auto ok = warrenctl({"--tls", "--tls-ca", ca, "--host", "localhost", "--port", port,
                       "declare-queue", "over-tls"});
  BOOST_TEST(ok.exit_code == 0, ok.err);
  auto listed =
      warrenctl({"--tls", "--tls-ca", ca, "--host", "localhost", "--port", port, "list", "queues"});
  BOOST_TEST(listed.out.find("over-tls") != std::string::npos, listed.out + listed.err);

  // A CA that did not sign the node's certificate, and the system's store, which has neither.
  for (auto trust : {std::vector<std::string>{"--tls-ca", certs.path("other-ca.pem")},
                     std::vector<std::string>{}}) {
    std::vector<std::string> args{"--tls", "--host", "localhost", "--port", port};
    args.insert(args.end(), trust.begin(), trust.end());
    args.insert(args.end(), {"list", "queues"});
    auto r = warrenctl(args);
    BOOST_TEST(r.exit_code == 1);
    BOOST_TEST(r.err.find("error: TLS_ERROR: ") == 0u, r.err);
    BOOST_TEST(r.err.find("not trusted") != std::string::npos, r.err);
  }
  // The name is checked: 127.0.0.1 is not a name the certificate carries, unless told which.
  auto by_address = warrenctl({"--tls", "--tls-ca", ca, "--port", port, "list", "queues"});
  BOOST_TEST(by_address.exit_code == 1);
  BOOST_TEST(by_address.err.find("hostname mismatch") != std::string::npos, by_address.err);
  auto named = warrenctl({"--tls", "--tls-ca", ca, "--tls-server-name", "localhost", "--port", port,
                          "list", "queues"});
  BOOST_TEST(named.exit_code == 0, named.err);
  // The plain door is unchanged, and a plain client on the TLS port fails cleanly.
  BOOST_TEST(warrenctl({"--port", std::to_string(n.node.port()), "list", "queues"}).exit_code == 0);
  auto plain_on_tls = warrenctl({"--port", port, "list", "queues"});
  BOOST_TEST(plain_on_tls.exit_code == 1);
  BOOST_TEST(n.node.alive());
}

BOOST_AUTO_TEST_CASE(pika_publishes_and_gets_over_amqps) {
  certificates certs;
  tls_node n(certs);
  auto r = pika(n.amqps_port, certs.path("ca.pem"));
  BOOST_TEST(r.exit_code == 0, r.out + r.err);
  BOOST_TEST(r.out == "ok\n");
  auto untrusted = pika(n.amqps_port, certs.path("other-ca.pem"));
  BOOST_TEST(untrusted.exit_code == 1);
  BOOST_TEST(untrusted.out.find("CERTIFICATE_VERIFY_FAILED") != std::string::npos, untrusted.out);
  // The queue pika declared over TLS is the same broker's, seen from the plain door.
  auto listed = warrenctl({"--port", std::to_string(n.node.port()), "list", "queues"});
  BOOST_TEST(listed.out.find("tls-q") != std::string::npos, listed.out);
}

BOOST_AUTO_TEST_CASE(a_node_with_a_ca_requires_client_certificates_on_both_tls_doors) {
  certificates certs;
  tls_node n(certs, {"--tls-ca", certs.path("ca.pem")});
  auto ca = certs.path("ca.pem");
  auto cert = certs.path("client.pem");
  auto key = certs.path("client.key");
  auto port = std::to_string(n.tls_port);

  auto with_cert = warrenctl({"--tls", "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key,
                              "--host", "localhost", "--port", port, "list", "vhosts"});
  BOOST_TEST(with_cert.exit_code == 0, with_cert.err);
  auto without =
      warrenctl({"--tls", "--tls-ca", ca, "--host", "localhost", "--port", port, "list", "vhosts"});
  BOOST_TEST(without.exit_code == 1);

  auto pika_with = pika(n.amqps_port, ca, cert, key);
  BOOST_TEST(pika_with.exit_code == 0, pika_with.out + pika_with.err);
  auto pika_without = pika(n.amqps_port, ca);
  BOOST_TEST(pika_without.exit_code == 1);
  BOOST_TEST(n.node.wait_for_log("peer did not return a certificate"));
  BOOST_TEST(n.node.alive());
}

BOOST_AUTO_TEST_CASE(a_silent_tls_connection_is_closed_after_the_handshake_timeout) {
  certificates certs;
  tls_node n(certs, {"--handshake-timeout", "300"});
  int silent_amqps = warren::test::idle_socket(n.amqps_port);
  int silent_tls = warren::test::idle_socket(n.tls_port);
  BOOST_TEST(warren::test::closed_by_node(silent_amqps));
  BOOST_TEST(warren::test::closed_by_node(silent_tls));
  close(silent_amqps);
  close(silent_tls);
  BOOST_TEST(n.node.wait_for_log("(AMQPS listener) failed"));
  BOOST_TEST(n.node.wait_for_log("(RPC TLS listener) failed"));
  BOOST_TEST(n.node.alive());
}

BOOST_AUTO_TEST_CASE(unusable_tls_files_stop_the_node_at_start_naming_the_file) {
  certificates certs;
  temp_dir data;
  auto start = [&](std::vector<std::string> tls_args) {
    std::vector<std::string> argv{
        warren::test::node_binary(), "--data-dir", data.path(), "--port", "0", "--amqp-port", "0"};
    argv.insert(argv.end(), tls_args.begin(), tls_args.end());
    return run_command(argv);
  };
  auto missing = certs.path("missing.pem");
  auto r = start({"--tls-cert", missing, "--tls-key", certs.path("server.key")});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST((r.out + r.err).find(missing) != std::string::npos, r.out + r.err);

  // A key where the certificate should be.
  r = start({"--tls-cert", certs.path("server.key"), "--tls-key", certs.path("server.key")});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST((r.out + r.err).find(certs.path("server.key") + " is not usable") != std::string::npos,
             r.out + r.err);

  r = start({"--tls-cert", certs.path("server.pem")});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST((r.out + r.err).find("--tls-key") != std::string::npos, r.out + r.err);

  // TLS ports without a certificate are a usage error.
  auto usage =
      run_command({warren::test::node_binary(), "--data-dir", data.path(), "--amqps-port", "5671"});
  BOOST_TEST(usage.exit_code == 2);
}
