// tls_context: TLS for both front doors and for the client, on kj's TLS library (OpenSSL).
//
// The files are PEM: a certificate (chain, leaf first), its private key, and CA certificates.
// Loading reads them once; a missing or unparsable file is a std::runtime_error naming it, so a
// node with a bad --tls-cert stops at start-up instead of failing every handshake.
#pragma once

#include <kj/async-io.h>
#include <kj/compat/tls.h>
#include <kj/timer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace warren::transport {

struct tls_files {
  std::string cert;  // certificate chain (PEM), leaf first
  std::string key;   // its private key (PEM, unencrypted)
  std::string ca;    // CA certificates (PEM) to trust; empty: none (server), system (client)
};

/// A kj::TlsContext with the keys and certificates it was made from, kept alive beside it.
class tls_context {
 public:
  /// A server's: presents `files.cert`; when `files.ca` is given, clients must present a
  /// certificate signed by one of its CAs. With a timer, a handshake unfinished after
  /// `handshake_ms` fails. (Without one, it checks the files.)
  static std::unique_ptr<tls_context> server(const tls_files& files, kj::Timer* timer,
                                             int64_t handshake_ms);
  /// A client's: trusts `files.ca` (the system's trust store when empty) and presents
  /// `files.cert` when given.
  static std::unique_ptr<tls_context> client(const tls_files& files);

  kj::TlsContext& get() { return *context_; }

 private:
  tls_context() = default;
  std::vector<kj::TlsCertificate> trusted_;
  std::unique_ptr<kj::TlsKeypair> keypair_;
  kj::Own<kj::TlsContext> context_;
};

}  // namespace warren::transport
