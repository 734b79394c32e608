// Plain-text tables and numbers for people: shared by warrenctl's output and the node's
// --stats-interval log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace warren::text {

using table = std::vector<std::vector<std::string>>;  // first row: headings

/// One line per row, columns padded to their widest cell (two spaces between columns).
std::vector<std::string> format_table(const table& rows);

/// A count or rate in at most 5 characters where possible: 950, 12.3k, 4.56M.
std::string compact(double n);

/// Bytes with a binary unit: 512 B, 3.4 KiB, 12.0 MiB, 1.2 GiB.
std::string bytes(double n);

}  // namespace warren::text
