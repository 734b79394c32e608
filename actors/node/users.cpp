#include "actors/node/users.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <stdexcept>

namespace warren {

namespace {

constexpr size_t salt_size = 4;

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Decodes base64; false when `text` is not base64.
bool unbase64(const std::string& text, std::string& out) {
  if (text.empty() || text.size() % 4 != 0) return false;
  out.assign(3 * text.size() / 4, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t padding = std::count(text.end() - 2, text.end(), '=');
  out.resize(static_cast<size_t>(n) - padding);
  return true;
}

}  // namespace

std::string hash_password(const std::string& password, const std::string& salt) {
  std::string input = salt + password;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return base64(salt + std::string(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string hash_password(const std::string& password) {
  std::string salt(salt_size, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(salt.data()), salt_size) != 1)
    throw std::runtime_error("no random bytes for a password salt");
  return hash_password(password, salt);
}

bool password_matches(const std::string& hash, const std::string& password) {
  std::string raw;
  if (!unbase64(hash, raw) || raw.size() != salt_size + SHA256_DIGEST_LENGTH) return false;
  auto expected = hash_password(password, raw.substr(0, salt_size));
  return expected.size() == hash.size() &&
         CRYPTO_memcmp(expected.data(), hash.data(), hash.size()) == 0;
}

bool is_password_hash(const std::string& hash) {
  std::string raw;
  return hash.empty() || (unbase64(hash, raw) && raw.size() == salt_size + SHA256_DIGEST_LENGTH);
}

bool has_tag(const user_record& user, const std::string& tag) {
  return std::find(user.tags.begin(), user.tags.end(), tag) != user.tags.end();
}

}  // namespace warren
