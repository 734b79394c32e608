// Message ids: 16 bytes, 8 random (a per-thread seeded Mersenne Twister) followed by an 8-byte
// process-wide sequence, so ids are unique within a process and very unlikely to repeat across
// restarts. Shown as 32 hex digits grouped 8-4-4-16.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace warren {

struct message_id {
  std::array<uint8_t, 16> bytes{};

  friend bool operator==(const message_id& a, const message_id& b) { return a.bytes == b.bytes; }
  friend bool operator!=(const message_id& a, const message_id& b) { return !(a == b); }
};

/// A fresh id; thread-safe.
message_id next_message_id();

/// "0123abcd-0123-0123-0123456789abcdef".
std::string to_string(const message_id& id);

/// Accepts the grouped form and 32 plain hex digits; false on anything else.
bool parse_message_id(std::string_view text, message_id& out);

/// From 16 raw bytes; false when the size is wrong.
bool message_id_from_bytes(std::string_view raw, message_id& out);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_id& x) {
  return f(x.bytes);
}

}  // namespace warren
