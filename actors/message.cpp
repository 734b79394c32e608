#include "actors/message.hpp"

#include <algorithm>
#include <sstream>

namespace warren {

bool operator==(const field_value& a, const field_value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case field_value::none:
      return true;
    case field_value::boolean:
      return a.b == b.b;
    case field_value::integer:
      return a.i == b.i;
    case field_value::floating:
      return a.d == b.d;
    case field_value::text:
    case field_value::bytes:
      return a.s == b.s;
  }
  return false;
}

std::string to_string(const field_value& v) {
  switch (v.kind) {
    case field_value::none:
      return "<none>";
    case field_value::boolean:
      return v.b ? "true" : "false";
    case field_value::integer:
      return std::to_string(v.i);
    case field_value::floating: {
      std::ostringstream out;
      out << v.d;
      return out.str();
    }
    case field_value::text:
      return v.s;
    case field_value::bytes:
      return "<" + std::to_string(v.s.size()) + " bytes>";
  }
  return {};
}

const field_value* find_field(const field_table& table, const std::string& key) {
  for (const auto& f : table)
    if (f.key == key) return &f.value;
  return nullptr;
}

bool same_table(const field_table& a, const field_table& b) {
  if (a.size() != b.size()) return false;
  return std::all_of(a.begin(), a.end(), [&](const field& f) {
    const auto* other = find_field(b, f.key);
    return other != nullptr && *other == f.value;
  });
}

bool only_delivery_mode(const message_properties& p) {
  return p.content_type.empty() && p.content_encoding.empty() && p.headers.empty() &&
         p.priority == 0 && p.correlation_id.empty() && p.reply_to.empty() &&
         p.expiration.empty() && p.message_id.empty() && p.timestamp == 0 && p.type.empty() &&
         p.user_id.empty() && p.app_id.empty();
}

const message_properties& message::properties() const {
  if (properties_) return *properties_;
  static const message_properties transient_defaults = [] {
    message_properties p;
    p.persistent = false;
    return p;
  }();
  static const message_properties persistent_defaults = [] {
    message_properties p;
    p.persistent = true;
    return p;
  }();
  return persistent_ ? persistent_defaults : transient_defaults;
}

void message::set_properties(message_properties p) {
  persistent_ = p.persistent;
  if (only_delivery_mode(p))
    properties_.reset();
  else
    properties_ = std::make_shared<const message_properties>(std::move(p));
}

}  // namespace warren
