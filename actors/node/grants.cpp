#include "actors/node/grants.hpp"

#include "core/hex.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace warren {

std::string new_grant_token() {
  std::string token(grant_token_size, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(token.data()), static_cast<int>(token.size())) !=
      1)
    throw std::runtime_error("the system's random source failed");
  return token;
}

std::string grant_token_hash(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

const char* to_string(grant_kind kind) {
  return kind == grant_kind::publisher ? "publisher" : "consumer";
}

std::string exact_name_pattern(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

permission_record grant_permissions(const grant_record& g) {
  permission_record p{g.user, g.vhost, "", "", ""};
  if (g.kind == grant_kind::publisher)
    p.write = exact_name_pattern(g.target.empty() ? "amq.default" : g.target);
  else
    p.read = exact_name_pattern(g.target);
  return p;
}

}  // namespace warren
