#include "persistence/record_seal.hpp"

#include "persistence/crc32c.hpp"

#include <cstdio>

namespace warren::persistence {

namespace {

uint32_t checksum(uint8_t table, std::string_view key, std::string_view value) {
  uint8_t head[5] = {table, static_cast<uint8_t>(key.size()), static_cast<uint8_t>(key.size() >> 8),
                     static_cast<uint8_t>(key.size() >> 16),
                     static_cast<uint8_t>(key.size() >> 24)};
  auto crc = crc32c(head, sizeof head);
  crc = crc32c(key.data(), key.size(), crc);
  return crc32c(value.data(), value.size(), crc);
}

}  // namespace

std::string seal(uint8_t table, std::string_view key, std::string_view value) {
  auto crc = checksum(table, key, value);
  std::string out;
  out.reserve(value.size() + 4);
  out.append(value);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  return out;
}

std::optional<std::string_view> unseal(uint8_t table, std::string_view key,
                                       std::string_view stored) {
  if (stored.size() < 4) return std::nullopt;
  auto value = stored.substr(0, stored.size() - 4);
  uint32_t found = 0;
  for (int i = 0; i < 4; ++i)
    found |= static_cast<uint32_t>(static_cast<uint8_t>(stored[value.size() + i])) << (8 * i);
  if (found != checksum(table, key, value)) return std::nullopt;
  return value;
}

std::string printable_key(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace warren::persistence
