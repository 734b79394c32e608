// Logs the cluster peers that CAF's OpenSSL module turns away. The module refuses a peer without
// a certificate from the cluster CA inside SSL_accept and closes the socket without a word, and
// it offers no hook. warren-node therefore defines SSL_accept itself: the dynamic linker binds
// libcaf_openssl's (and kj-tls's) calls to this one, which calls OpenSSL's and, when a handshake
// on the cluster port fails for good, logs the peer's address and OpenSSL's reason. Handshakes
// on other ports (kj-tls's doors log their own) and on sockets without a file descriptor pass
// through untouched.
#include "apps/cluster_link.hpp"
#include "core/log.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace warren::node {

namespace {

std::atomic<uint16_t> watched_port{0};

uint16_t port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  return 0;
}

std::string host_of(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof text);
  else if (addr.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof text);
  return text;
}

std::string refusal_reason(const SSL* ssl) {
  auto verified = SSL_get_verify_result(ssl);
  if (verified != X509_V_OK)
    return std::string("certificate refused: ") + X509_verify_cert_error_string(verified);
  if (auto code = ERR_peek_last_error()) {
    const char* reason = ERR_reason_error_string(code);
    return reason ? reason : "TLS error " + std::to_string(code);
  }
  return "connection closed during the handshake";
}

}  // namespace

// Called by SSL_accept below, at global scope.
void report_cluster_refusal(SSL* ssl) {
  uint16_t port = watched_port.load(std::memory_order_relaxed);
  int fd = SSL_get_fd(ssl);
  if (port == 0 || fd < 0) return;
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof local, peer_len = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      port_of(local) != port)
    return;
  std::string who = "an unknown peer";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0)
    who = host_of(peer) + ":" + std::to_string(port_of(peer));
  log(log_level::warn, "cluster",
      "refused " + who + " on the cluster port: TLS handshake failed (" + refusal_reason(ssl) +
          ")");
}

void log_refused_handshakes_on(uint16_t port) {
  watched_port.store(port, std::memory_order_relaxed);
}

}  // namespace warren::node

extern "C" int SSL_accept(SSL* ssl) {
  using accept_fn = int (*)(SSL*);
  static const auto openssl_accept = reinterpret_cast<accept_fn>(dlsym(RTLD_NEXT, "SSL_accept"));
  if (openssl_accept == nullptr) {
    std::fputs("warren-node: OpenSSL's SSL_accept not found (dlsym)\n", stderr);
    std::abort();
  }
  int result = openssl_accept(ssl);
  if (result <= 0) {
    int saved_errno = errno;  // the caller looks at it after us
    int error = SSL_get_error(ssl, result);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
      warren::node::report_cluster_refusal(ssl);
    errno = saved_errno;
  }
  return result;
}
