#include "apps/text_table.hpp"

#include <algorithm>
#include <cstdio>

namespace warren::text {

std::vector<std::string> format_table(const table& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

namespace {

std::string scaled(double n, double base, const char* const* units, size_t count,
                   const char* separator) {
  size_t unit = 0;
  while (n >= base * 0.9995 && unit + 1 < count) {
    n /= base;
    ++unit;
  }
  char buf[32];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%.0f%s%s", n, separator, units[0]);
  else
    std::snprintf(buf, sizeof buf,
                  n < 9.995   ? "%.2f%s%s"
                  : n < 99.95 ? "%.1f%s%s"
                              : "%.0f%s%s",
                  n, separator, units[unit]);
  return buf;
}

}  // namespace

std::string compact(double n) {
  static const char* const units[] = {"", "k", "M", "G", "T"};
  return scaled(n, 1000, units, 5, "");
}

std::string bytes(double n) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return scaled(n, 1024, units, 5, " ");
}

}  // namespace warren::text
