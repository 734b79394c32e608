#include "core/message.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
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
    case field_value::table:
      return same_table(a.items, b.items);
    case field_value::array:
      return a.items.size() == b.items.size() &&
             std::equal(a.items.begin(), a.items.end(), b.items.begin(),
                        [](const field& x, const field& y) { return x.value == y.value; });
  }
  return false;
}

field_value decimal_value(int64_t digits, uint8_t scale) {
  auto x = field_value::of_double(static_cast<double>(digits) / std::pow(10.0, scale));
  x.amqp_type = 'D';
  x.i = digits;
  x.scale = scale;
  return x;
}

field_value field_value::of_table(std::vector<field> entries) {
  field_value x;
  x.kind = table;
  x.items = std::move(entries);
  return x;
}

field_value field_value::of_array(std::vector<field_value> values) {
  field_value x;
  x.kind = array;
  for (auto& v : values) x.items.push_back({std::string(), std::move(v)});
  return x;
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
    case field_value::table:
    case field_value::array: {
      bool table = v.kind == field_value::table;
      std::string out = table ? "{" : "[";
      for (size_t n = 0; n < v.items.size(); ++n) {
        if (n > 0) out += ", ";
        if (table) out += v.items[n].key + "=";
        out += to_string(v.items[n].value);
      }
      return out + (table ? "}" : "]");
    }
  }
  return {};
}

const field_value* find_field(const field_table& table, const std::string& key) {
  for (const auto& f : table)
    if (f.key == key) return &f.value;
  return nullptr;
}

std::string first_difference(const field_table& a, const field_table& b) {
  std::vector<std::string> keys;
  for (const auto* t : {&a, &b})
    for (const auto& f : *t) keys.push_back(f.key);
  std::sort(keys.begin(), keys.end());
  for (const auto& key : keys) {
    const auto *x = find_field(a, key), *y = find_field(b, key);
    if (x == nullptr || y == nullptr || !(*x == *y)) return key;
  }
  return {};
}

bool same_table(const field_table& a, const field_table& b) {
  if (a.size() != b.size()) return false;
  return std::all_of(a.begin(), a.end(), [&](const field& f) {
    const auto* other = find_field(b, f.key);
    return other != nullptr && *other == f.value;
  });
}

const std::array<text_property, 9> text_properties{{
    {"content_type", &message_properties::content_type, property_flag::content_type},
    {"content_encoding", &message_properties::content_encoding, property_flag::content_encoding},
    {"correlation_id", &message_properties::correlation_id, property_flag::correlation_id},
    {"reply_to", &message_properties::reply_to, property_flag::reply_to},
    {"expiration", &message_properties::expiration, property_flag::expiration},
    {"message_id", &message_properties::message_id, property_flag::message_id},
    {"type", &message_properties::type, property_flag::type},
    {"user_id", &message_properties::user_id, property_flag::user_id},
    {"app_id", &message_properties::app_id, property_flag::app_id},
}};

namespace {

// Every property at its default value (whether set to it or not).
bool values_default(const message_properties& p) {
  return p.content_type.empty() && p.content_encoding.empty() && p.headers.empty() &&
         p.priority == 0 && p.correlation_id.empty() && p.reply_to.empty() &&
         p.expiration.empty() && p.message_id.empty() && p.timestamp == 0 && p.type.empty() &&
         p.user_id.empty() && p.app_id.empty();
}

// Properties that carry nothing but flags (amqplib sends empty headers with every message): one
// shared object per flag set and persistence, made on first use and kept for the process's life
// (13 flag bits: at most 16384 of them), so that such messages cost no allocation.
std::shared_ptr<const message_properties> interned_defaults(bool persistent, uint16_t set) {
  constexpr size_t per_mode = (property_flag::all >> 3) + 1;
  static std::array<std::atomic<const message_properties*>, 2 * per_mode> table{};
  auto& slot = table[(persistent ? per_mode : 0) + ((set & property_flag::all) >> 3)];
  auto* found = slot.load(std::memory_order_acquire);
  if (found == nullptr) {
    auto* made = new message_properties;
    made->persistent = persistent;
    made->set_to_default = set & property_flag::all;
    if (slot.compare_exchange_strong(found, made, std::memory_order_acq_rel))
      found = made;
    else
      delete made;  // another thread made it first
  }
  return std::shared_ptr<const message_properties>(std::shared_ptr<void>(), found);  // unowned
}

}  // namespace

bool only_delivery_mode(const message_properties& p) {
  return (p.set_to_default & ~property_flag::delivery_mode) == 0 && values_default(p);
}

uint16_t present_properties(const message_properties& p) {
  namespace f = property_flag;
  uint16_t present = p.set_to_default & f::all;
  auto mark = [&](bool valued, uint16_t flag) {
    if (valued) present |= flag;
  };
  mark(!p.content_type.empty(), f::content_type);
  mark(!p.content_encoding.empty(), f::content_encoding);
  mark(!p.headers.empty(), f::headers);
  mark(p.persistent, f::delivery_mode);
  mark(p.priority != 0, f::priority);
  mark(!p.correlation_id.empty(), f::correlation_id);
  mark(!p.reply_to.empty(), f::reply_to);
  mark(!p.expiration.empty(), f::expiration);
  mark(!p.message_id.empty(), f::message_id);
  mark(p.timestamp != 0, f::timestamp);
  mark(!p.type.empty(), f::type);
  mark(!p.user_id.empty(), f::user_id);
  mark(!p.app_id.empty(), f::app_id);
  return present;
}

const message_properties& message::properties() const {
  if (properties_) return *properties_;
  // Messages without properties share these: transient without a delivery mode, transient with
  // mode 1, and persistent.
  static const auto defaults = [] {
    std::array<message_properties, 3> d;
    d[1].set_to_default = property_flag::delivery_mode;
    d[2].persistent = true;  // its delivery mode 2 is present anyway
    return d;
  }();
  return defaults[persistent_ ? 2 : mode_set_ ? 1 : 0];
}

void message::set_properties(message_properties p) {
  persistent_ = p.persistent;
  mode_set_ = persistent_ || (p.set_to_default & property_flag::delivery_mode) != 0;
  if (only_delivery_mode(p)) {
    properties_.reset();
    properties_heap_ = 0;
  } else if (values_default(p)) {
    properties_ = interned_defaults(p.persistent, p.set_to_default);
    properties_heap_ = 0;  // shared by every such message, for good
  } else {
    properties_heap_ = properties_heap(p);
    properties_ = std::make_shared<const message_properties>(std::move(p));
  }
}

int field_depth(const field_table& table) {
  int deepest = 0;
  std::vector<std::pair<const field_table*, int>> todo{{&table, 0}};
  while (!todo.empty()) {
    auto [items, depth] = todo.back();
    todo.pop_back();
    for (const auto& f : *items)
      if (f.value.kind == field_value::table || f.value.kind == field_value::array) {
        deepest = std::max(deepest, depth + 1);
        todo.emplace_back(&f.value.items, depth + 1);
      }
  }
  return deepest;
}

std::string check_field_depth(const std::string& what, const field_table& table) {
  auto depth = field_depth(table);
  if (depth <= max_field_depth) return {};
  return what + " nest " + std::to_string(depth) + " levels of tables and arrays deep; at most " +
         std::to_string(max_field_depth) + " are taken";
}

namespace {

// libstdc++ keeps up to 15 characters inside the string object; longer ones take capacity + 1
// bytes of heap.
uint64_t string_heap(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

}  // namespace

uint64_t heap_bytes(const field_table& table) {
  uint64_t total = table.capacity() * sizeof(field);
  std::vector<const field_table*> todo;
  for (const field_table* items = &table; items != nullptr;) {
    for (const auto& f : *items) {
      total += string_heap(f.key) + string_heap(f.value.s);
      if (!f.value.items.empty()) {
        total += f.value.items.capacity() * sizeof(field);
        todo.push_back(&f.value.items);
      }
    }
    items = todo.empty() ? nullptr : todo.back();
    if (!todo.empty()) todo.pop_back();
  }
  return total;
}

uint64_t message::properties_heap(const message_properties& p) {
  uint64_t total = sizeof(message_properties) + warren::heap_bytes(p.headers);
  for (const auto* s : {&p.content_type, &p.content_encoding, &p.correlation_id, &p.reply_to,
                        &p.expiration, &p.message_id, &p.type, &p.user_id, &p.app_id})
    total += string_heap(*s);
  return total;
}

// Called several times in a message's life in a queue (ready, handed out, settled): the
// properties' part, which walks the headers, is worked out once when they are set.
uint64_t message::heap_bytes() const {
  return string_heap(exchange) + string_heap(routing_key) + properties_heap_;
}

}  // namespace warren
