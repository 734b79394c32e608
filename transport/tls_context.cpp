#include "transport/tls_context.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace warren::transport {

namespace {

std::string read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the TLS " + std::string(what) + " file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parses with kj, turning its exception into one that names the file.
template <class Parse>
auto parse_pem(const std::string& path, const char* what, Parse&& parse) {
  try {
    return parse();
  } catch (const kj::Exception& e) {
    throw std::runtime_error("the TLS " + std::string(what) + " file " + path +
                             " is not usable: " + e.getDescription().cStr());
  }
}

// One kj::TlsCertificate per certificate in a CA bundle: each is trusted on its own, where a
// single parsed chain would only contribute its first.
std::vector<kj::TlsCertificate> load_ca_bundle(const std::string& path) {
  const std::string begin = "-----BEGIN CERTIFICATE-----";
  std::string pem = read_pem(path, "CA");
  std::vector<kj::TlsCertificate> out;
  for (size_t at = pem.find(begin); at != std::string::npos;) {
    size_t next = pem.find(begin, at + begin.size());
    std::string one = pem.substr(at, next == std::string::npos ? std::string::npos : next - at);
    out.push_back(parse_pem(path, "CA", [&] { return kj::TlsCertificate(one.c_str()); }));
    at = next;
  }
  if (out.empty()) throw std::runtime_error("the TLS CA file " + path + " holds no certificate");
  return out;
}

kj::TlsKeypair load_keypair(const tls_files& files) {
  if (files.key.empty())
    throw std::runtime_error("a TLS certificate needs its private key (--tls-key)");
  std::string cert = read_pem(files.cert, "certificate");
  std::string key = read_pem(files.key, "key");
  return kj::TlsKeypair{
      parse_pem(files.key, "key", [&] { return kj::TlsPrivateKey(key.c_str()); }),
      parse_pem(files.cert, "certificate", [&] { return kj::TlsCertificate(cert.c_str()); })};
}

}  // namespace

std::unique_ptr<tls_context> tls_context::server(const tls_files& files, kj::Timer* timer,
                                                 int64_t handshake_ms) {
  if (files.cert.empty()) throw std::runtime_error("TLS needs a certificate (--tls-cert)");
  std::unique_ptr<tls_context> out(new tls_context());
  kj::TlsContext::Options options;
  out->keypair_ = std::make_unique<kj::TlsKeypair>(load_keypair(files));
  options.defaultKeypair = *out->keypair_;
  options.useSystemTrustStore = false;
  if (!files.ca.empty()) {
    out->trusted_ = load_ca_bundle(files.ca);
    options.trustedCertificates = kj::arrayPtr(out->trusted_.data(), out->trusted_.size());
    options.verifyClients = true;
  }
  if (timer != nullptr && handshake_ms > 0) {
    options.timer = *timer;
    options.acceptTimeout = handshake_ms * kj::MILLISECONDS;
  }
  out->context_ = kj::heap<kj::TlsContext>(kj::mv(options));
  return out;
}

std::unique_ptr<tls_context> tls_context::client(const tls_files& files) {
  std::unique_ptr<tls_context> out(new tls_context());
  kj::TlsContext::Options options;
  if (!files.ca.empty()) {
    out->trusted_ = load_ca_bundle(files.ca);
    options.trustedCertificates = kj::arrayPtr(out->trusted_.data(), out->trusted_.size());
    options.useSystemTrustStore = false;
  }
  if (!files.cert.empty()) {
    out->keypair_ = std::make_unique<kj::TlsKeypair>(load_keypair(files));
    options.defaultKeypair = *out->keypair_;
  }
  out->context_ = kj::heap<kj::TlsContext>(kj::mv(options));
  return out;
}

}  // namespace warren::transport
