#include "core/names.hpp"

#include <cstdio>
#include <random>

namespace warren {

namespace {

constexpr size_t max_length = 255;

// Length of the UTF-8 sequence starting at s[i], or 0 when it is malformed.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto lead = static_cast<unsigned char>(s[i]);
  size_t len = lead < 0x80           ? 1
               : (lead >> 5) == 0x6  ? 2
               : (lead >> 4) == 0xE  ? 3
               : (lead >> 3) == 0x1E ? 4
                                     : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  return len;
}

std::string check_characters(std::string_view what, std::string_view text) {
  if (text.size() > max_length)
    return std::string(what) + " is " + std::to_string(text.size()) +
           " bytes long; the limit is 255";
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F)
      return std::string(what) + " " + quote(text) + " contains a control character at byte " +
             std::to_string(i);
    size_t len = utf8_sequence_length(text, i);
    if (len == 0)
      return std::string(what) + " " + quote(text) + " is not valid UTF-8 (byte " +
             std::to_string(i) + ")";
    i += len;
  }
  return {};
}

}  // namespace

std::string check_name(std::string_view what, std::string_view name) {
  if (name.empty()) return std::string(what) + " is empty";
  return check_characters(what, name);
}

std::string check_key(std::string_view what, std::string_view key) {
  return check_characters(what, key);
}

bool is_reserved_name(std::string_view name) {
  return name.substr(0, 4) == "amq.";
}

std::string generated_name(std::string_view prefix) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  thread_local std::mt19937_64 engine{std::random_device{}()};
  std::string name(prefix);
  for (int i = 0; i < 22; ++i) name += alphabet[engine() % 64];
  return name;
}

std::string quote(std::string_view name) {
  std::string out = "'";
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "'";
  return out;
}

}  // namespace warren
