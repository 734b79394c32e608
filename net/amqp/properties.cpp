#include "net/amqp/properties.hpp"

#include <string_view>

#include <cmath>

namespace warren::amqp {

namespace {

warren::field_value to_field(const value& v);
value to_value(const warren::field_value& f);

warren::field_value to_untyped_field(const value& v);

// The broker's value, remembering the AMQP type it came as (see field_value::amqp_type).
warren::field_value to_field(const value& v) {
  if (v.type == 'D') return warren::decimal_value(v.integer, v.scale);
  auto f = to_untyped_field(v);
  if (std::string_view("bBsuIilLTfd").find(v.type) != std::string_view::npos)
    f.amqp_type = static_cast<uint8_t>(v.type);
  return f;
}

warren::field_value to_untyped_field(const value& v) {
  switch (v.type) {
    case 't':
      return warren::field_value::of_bool(v.boolean);
    case 'f':
    case 'd':
      return warren::field_value::of_double(v.floating);
    case 'D':
      return warren::field_value::of_double(static_cast<double>(v.integer) /
                                            std::pow(10.0, v.scale));
    case 'S':
      return warren::field_value::of_text(v.bytes);
    case 'x':
      return warren::field_value::of_bytes(v.bytes);
    case 'V':
      return {};
    case 'F':
      return warren::field_value::of_table(to_fields(*v.nested_table));
    case 'A': {
      std::vector<warren::field_value> values;
      for (const auto& item : *v.nested_array) values.push_back(to_field(item));
      return warren::field_value::of_array(std::move(values));
    }
    default:  // every integer width, and timestamps
      return warren::field_value::of_int(v.integer);
  }
}

value to_value(const warren::field_value& f) {
  value v;
  switch (f.kind) {
    case warren::field_value::none:
      break;
    case warren::field_value::boolean:
      v = value::of_bool(f.b);
      break;
    case warren::field_value::integer:
      v = value::of_long(f.i);
      if (std::string_view("bBsuIilLT").find(static_cast<char>(f.amqp_type)) !=
              std::string_view::npos &&
          f.amqp_type != 0)
        v.type = static_cast<char>(f.amqp_type);  // as it was published
      break;
    case warren::field_value::floating:
      v.type = f.amqp_type == 'f' ? 'f' : 'd';
      v.floating = f.d;
      if (f.amqp_type == 'D') {
        v.type = 'D';
        v.integer = f.i;
        v.scale = f.scale;
      }
      break;
    case warren::field_value::text:
      v = value::of_string(f.s);
      break;
    case warren::field_value::bytes:
      v.type = 'x';
      v.bytes = f.s;
      break;
    case warren::field_value::table:
      v = value::of_table(to_table(f.items));
      break;
    case warren::field_value::array:
      v.type = 'A';
      v.nested_array = std::make_shared<array>();
      for (const auto& item : f.items) v.nested_array->push_back(to_value(item.value));
      break;
  }
  return v;
}

// Copies a published text property; an empty one is remembered as set (RabbitMQ hands it back).
void copy_text(const std::optional<std::string>& from, std::string& to, uint16_t flag,
               uint16_t& set_to_default) {
  if (!from) return;
  to = *from;
  if (to.empty()) set_to_default |= flag;
}

// The property when `present` has its flag: a text property present with no text is "".
std::optional<std::string> text_if(const std::string& s, uint16_t present, uint16_t flag) {
  if ((present & flag) == 0) return std::nullopt;
  return s;
}

}  // namespace

warren::field_table to_fields(const table& t) {
  warren::field_table out;
  out.reserve(t.size());
  for (const auto& [key, v] : t) out.push_back({key, to_field(v)});
  return out;
}

table to_table(const warren::field_table& fields) {
  table out;
  out.reserve(fields.size());
  for (const auto& f : fields) out.emplace_back(f.key, to_value(f.value));
  return out;
}

message_properties to_message_properties(const basic_properties& p) {
  namespace f = property_flag;
  message_properties m;
  uint16_t& set = m.set_to_default;
  if (p.delivery_mode) {
    if (*p.delivery_mode != 1 && *p.delivery_mode != 2)
      throw protocol_error(reply_code::syntax_error,
                           "delivery mode " + std::to_string(*p.delivery_mode) +
                               " is neither 1 (transient) nor 2 (persistent)");
    m.persistent = *p.delivery_mode == 2;
    if (!m.persistent) set |= f::delivery_mode;
  }
  copy_text(p.content_type, m.content_type, f::content_type, set);
  copy_text(p.content_encoding, m.content_encoding, f::content_encoding, set);
  if (p.headers) {
    m.headers = to_fields(*p.headers);
    if (m.headers.empty()) set |= f::headers;
  }
  if (p.priority) {
    m.priority = *p.priority;
    if (m.priority == 0) set |= f::priority;
  }
  copy_text(p.correlation_id, m.correlation_id, f::correlation_id, set);
  copy_text(p.reply_to, m.reply_to, f::reply_to, set);
  copy_text(p.expiration, m.expiration, f::expiration, set);
  copy_text(p.message_id, m.message_id, f::message_id, set);
  if (p.timestamp) {
    m.timestamp = static_cast<int64_t>(*p.timestamp);
    if (m.timestamp == 0) set |= f::timestamp;
  }
  copy_text(p.type, m.type, f::type, set);
  copy_text(p.user_id, m.user_id, f::user_id, set);
  copy_text(p.app_id, m.app_id, f::app_id, set);
  return m;
}

basic_properties to_basic_properties(const message_properties& m) {
  namespace f = property_flag;
  auto present = present_properties(m);
  basic_properties p;
  if (present & f::delivery_mode) p.delivery_mode = m.persistent ? 2 : 1;
  p.content_type = text_if(m.content_type, present, f::content_type);
  p.content_encoding = text_if(m.content_encoding, present, f::content_encoding);
  if (present & f::headers) p.headers = to_table(m.headers);
  if (present & f::priority) p.priority = m.priority;
  p.correlation_id = text_if(m.correlation_id, present, f::correlation_id);
  p.reply_to = text_if(m.reply_to, present, f::reply_to);
  p.expiration = text_if(m.expiration, present, f::expiration);
  p.message_id = text_if(m.message_id, present, f::message_id);
  if (present & f::timestamp) p.timestamp = static_cast<uint64_t>(m.timestamp);
  p.type = text_if(m.type, present, f::type);
  p.user_id = text_if(m.user_id, present, f::user_id);
  p.app_id = text_if(m.app_id, present, f::app_id);
  return p;
}

}  // namespace warren::amqp
