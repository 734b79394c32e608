#include "actors/cluster/cluster_auth.hpp"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace warren {

namespace {

std::string hex(const unsigned char* bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(digits[bytes[i] >> 4]);
    out.push_back(digits[bytes[i] & 0xf]);
  }
  return out;
}

}  // namespace

std::string make_nonce() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for a nonce");
  return hex(bytes, sizeof bytes);
}

std::string cluster_proof(const std::string& secret, const std::string& purpose,
                          const std::string& nonce, const std::string& name) {
  std::string text = purpose + "|" + nonce + "|" + name;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &size);
  return hex(mac, size);
}

bool proofs_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool split_address(const std::string& address, std::string& host, uint16_t& port,
                   std::string& error) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    error = "'" + address + "' is not HOST:PORT";
    return false;
  }
  host = address.substr(0, colon);
  unsigned long value = 0;
  try {
    size_t used = 0;
    value = std::stoul(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    value = 0;
  }
  if (value == 0 || value > 65535) {
    error = "'" + address + "' has no port between 1 and 65535";
    return false;
  }
  port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace warren
