// The cluster link's settings and how they are put to use: where the cluster port listens, the
// shared secret (from a flag, a file or WARREN_CLUSTER_SECRET), and mutual TLS through CAF's own
// OpenSSL module.
//
// Trust: the boundary is the cluster CA. With TLS, a peer must present a certificate signed by
// --cluster-tls-ca before CAF's network layer passes any of its bytes on, so an outsider reaches
// no actor at all. Past that point nothing inside Warren can tell peers apart reliably: CAF 0.17
// delivers to any actor by its number and takes a routed message's source node from the message
// itself, so a connected peer can pose as any node. A holder of a certificate the CA signed is
// therefore trusted as a member, and the CA must sign members' certificates only. The secret's
// proof at join keeps honest nodes out of the wrong cluster; it does not stop such a holder.
// Without TLS the link is cleartext and unauthenticated, so the cluster port listens on loopback
// only and joins only loopback addresses: nodes on one machine, whose local users are trusted.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman_actor.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

/// Reads --cluster-secret-file into `opt.secret` and checks the settings together: TLS needs all
/// three files; without TLS the bind address and every --join host must be loopback ones.
/// Returns what is wrong, or "" when nothing is.
std::string settle_cluster_link(cluster_link_options& opt, const std::vector<std::string>& join);

/// With TLS: copies the three files to DATA_DIR/cluster-tls (owner only) and points `opt` at the
/// copies, then loads them as CAF's OpenSSL module will (a key that is not the certificate's, a CA
/// file that does not parse). CAF reads its files again for every connection and throws in its
/// network thread if one went bad meanwhile, so it gets copies nothing else writes: changing a
/// certificate takes a restart. Returns what is wrong, or "" when nothing is.
std::string adopt_cluster_tls_files(cluster_link_options& opt, const std::string& data_dir);

/// Loads CAF's OpenSSL module with the certificate, key and CA, when TLS is on.
void configure_cluster_link(caf::actor_system_config& cfg, const cluster_link_options& opt);

/// Listens for other nodes on `port` of `opt.bind`, over TLS when it is on; the bound port.
caf::expected<uint16_t> publish_cluster_actor(caf::actor_system& system, const caf::actor& cluster,
                                              uint16_t port, const cluster_link_options& opt);

/// Makes a middleman actor that connects to other nodes (the OpenSSL module's kind with TLS),
/// one per peer address (actors/cluster/peer_connector.hpp says why). Call it where the
/// middleman runs already.
std::function<caf::io::middleman_actor()> cluster_connectors(caf::actor_system& system,
                                                             const cluster_link_options& opt);

/// From now on, every TLS handshake refused on `port` (the cluster port) is logged with the
/// peer's address and the reason.
void log_refused_handshakes_on(uint16_t port);

}  // namespace warren::node
