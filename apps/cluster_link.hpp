// The cluster link's settings and how they are put to use: where the cluster port listens, the
// shared secret (from a flag, a file or WARREN_CLUSTER_SECRET), and mutual TLS through CAF's own
// OpenSSL module.
//
// Trust: with TLS, a peer must present a certificate signed by --cluster-tls-ca before CAF's
// network layer passes any of its bytes on, so an outsider reaches no actor at all (CAF delivers
// to any actor by its number once a peer is connected, so checks inside Warren's actors could
// never be enough). The secret's proof at join stays as a second check. Without TLS the link is
// cleartext and unauthenticated at that layer, so the cluster port may only listen on loopback:
// nodes on one machine, where every local user is trusted.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman_actor.hpp>

#include <cstdint>
#include <string>

namespace warren::node {

struct cluster_link_options {
  std::string bind = "127.0.0.1";  // --cluster-bind
  std::string tls_cert;            // --cluster-tls-cert: PEM chain, leaf first
  std::string tls_key;             // --cluster-tls-key
  std::string tls_ca;              // --cluster-tls-ca: peers' certificates must be signed by it
  std::string secret;              // --cluster-secret or WARREN_CLUSTER_SECRET
  std::string secret_file;         // --cluster-secret-file

  bool tls() const { return !tls_cert.empty(); }
};

/// Whether `address` is a loopback address (127.0.0.0/8, ::1) or "localhost".
bool is_loopback(const std::string& address);

/// Reads --cluster-secret-file into `opt.secret` and checks the settings together: TLS needs all
/// three files, and they must load as CAF's OpenSSL module will load them (a key that does not
/// match its certificate, a CA file that does not parse); without TLS the bind address must be a
/// loopback one. Returns what is wrong, or "" when nothing is.
std::string settle_cluster_link(cluster_link_options& opt);

/// Loads CAF's OpenSSL module with the certificate, key and CA, when TLS is on.
void configure_cluster_link(caf::actor_system_config& cfg, const cluster_link_options& opt);

/// Listens for other nodes on `port` of `opt.bind`, over TLS when it is on; the bound port.
caf::expected<uint16_t> publish_cluster_actor(caf::actor_system& system, const caf::actor& cluster,
                                              uint16_t port, const cluster_link_options& opt);

/// The middleman actor that connects to other nodes: the OpenSSL module's one with TLS.
caf::io::middleman_actor cluster_connector(caf::actor_system& system,
                                           const cluster_link_options& opt);

/// From now on, every TLS handshake refused on `port` (the cluster port) is logged with the
/// peer's address and the reason.
void log_refused_handshakes_on(uint16_t port);

}  // namespace warren::node
