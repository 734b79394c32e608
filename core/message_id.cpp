#include "core/message_id.hpp"

#include <atomic>
#include <cstring>
#include <random>

namespace warren {

namespace {

std::atomic<uint64_t> sequence{0};

uint64_t random_word() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }()};
  return engine();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

message_id next_message_id() {
  message_id id;
  uint64_t rnd = random_word();
  uint64_t seq = sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  for (int i = 0; i < 8; ++i) {
    id.bytes[i] = static_cast<uint8_t>(rnd >> (56 - 8 * i));
    id.bytes[8 + i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
  }
  return id;
}

std::string to_string(const message_id& id) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(35);
  for (size_t i = 0; i < id.bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8) out += '-';
    out += digits[id.bytes[i] >> 4];
    out += digits[id.bytes[i] & 0xF];
  }
  return out;
}

bool parse_message_id(std::string_view text, message_id& out) {
  std::string hex;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-') {
      // dashes only at the grouping positions of the canonical form
      if (i != 8 && i != 13 && i != 18) return false;
      continue;
    }
    hex += text[i];
  }
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool message_id_from_bytes(std::string_view raw, message_id& out) {
  if (raw.size() != out.bytes.size()) return false;
  std::memcpy(out.bytes.data(), raw.data(), raw.size());
  return true;
}

}  // namespace warren
