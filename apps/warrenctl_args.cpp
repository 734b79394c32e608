#include "apps/warrenctl_args.hpp"

#include <charconv>

namespace warrenctl {

using warren::client::field;
using warren::client::field_value;

namespace {

field parse_assignment(const std::string& text, const char* what) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw usage_error(std::string(what) + " '" + text + "' is not KEY=VALUE");
  field f;
  f.key = text.substr(0, eq);
  auto value = text.substr(eq + 1);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (!value.empty() && ec == std::errc() && end == value.data() + value.size())
    f.value = field_value::of_int(n);
  else if (value == "true" || value == "false")
    f.value = field_value::of_bool(value == "true");
  else
    f.value = field_value::of_text(value);
  return f;
}

}  // namespace

warren::client::field_table parse_assignments(const std::vector<std::string>& items,
                                              const char* what) {
  warren::client::field_table out;
  for (const auto& item : items) out.push_back(parse_assignment(item, what));
  return out;
}

}  // namespace warrenctl
