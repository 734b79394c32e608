// record_seal: the checksum every metadata value carries (data dir format 3). LMDB checks none
// of its pages, so a flipped bit in a value would be decoded as something else or crash the
// decoder. Each value is stored as
//   bytes | u32 crc32c(table, key, bytes), little-endian
// The checksum covers the table and the key too, so a value that lands under another key, or
// in another table, is caught as well.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warren::persistence {

/// `value` with its seal appended.
std::string seal(uint8_t table, std::string_view key, std::string_view value);

/// The value without its seal, or nullopt when the seal does not match.
std::optional<std::string_view> unseal(uint8_t table, std::string_view key,
                                       std::string_view stored);

/// `key` for a message: printable bytes as they are, others as \xNN.
std::string printable_key(std::string_view key);

}  // namespace warren::persistence
