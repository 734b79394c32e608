// Bytes as lowercase hex digits and back: how tokens and hashes are shown and typed.
#pragma once

#include <string>
#include <string_view>

namespace warren {

std::string to_hex(std::string_view bytes);

/// False (and `out` unchanged) unless `text` is an even number of hex digits (either case).
bool from_hex(std::string_view text, std::string& out);

}  // namespace warren
