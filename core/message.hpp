// The message model: field tables (headers and arguments), properties, and the message itself.
//
// A published message is immutable once it enters the broker and is shared, not copied, between
// the queues it is routed to (message_ptr).
#pragma once

#include "core/message_id.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace warren {

/// Runs the inspector `f` over `fields`, then `done()` if that worked. For inspect() overloads
/// that must rebuild something after loading; works with CAF's serializers (their result is an
/// error, empty on success) and its printer (result void) without this layer naming CAF.
template <class Inspector, class Done, class... Ts>
typename Inspector::result_type inspect_then(Inspector& f, Done done, Ts&... fields) {
  if constexpr (std::is_void_v<typename Inspector::result_type>) {
    f(fields...);
    done();
  } else {
    auto result = f(fields...);
    if (!result) done();
    return result;
  }
}

struct field;

/// One value of a field table. A small tagged struct rather than std::variant so that CAF can
/// inspect (and later serialize between nodes) it. Tables and arrays nest, as AMQP's do.
struct field_value {
  enum kind_t : uint8_t { none, boolean, integer, floating, text, bytes, table, array };
  kind_t kind = none;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;             // text or bytes
  std::vector<field> items;  // table: its entries; array: its values, with empty keys
  // The AMQP type letter a value arrived as (b B s u I i l L T f d D ...; 0 when it came another
  // way), so that it leaves as it came: RabbitMQ returns field values byte for byte, and
  // clients check. A decimal (D) is a floating value that also keeps its unscaled digits in `i`
  // and its decimal places in `scale`.
  uint8_t amqp_type = 0;
  uint8_t scale = 0;

  static field_value of_bool(bool v) {
    field_value x;
    x.kind = boolean;
    x.b = v;
    return x;
  }
  static field_value of_int(int64_t v) {
    field_value x;
    x.kind = integer;
    x.i = v;
    return x;
  }
  static field_value of_double(double v) {
    field_value x;
    x.kind = floating;
    x.d = v;
    return x;
  }
  static field_value of_text(std::string v) {
    field_value x;
    x.kind = text;
    x.s = std::move(v);
    return x;
  }
  static field_value of_bytes(std::string v) {
    field_value x;
    x.kind = bytes;
    x.s = std::move(v);
    return x;
  }
  static field_value of_table(std::vector<field> entries);
  static field_value of_array(std::vector<field_value> values);

  friend bool operator==(const field_value& a, const field_value& b);
  friend bool operator!=(const field_value& a, const field_value& b) { return !(a == b); }
};

/// An AMQP decimal: `digits` / 10^`scale`, kept exactly (amqp_type 'D').
field_value decimal_value(int64_t digits, uint8_t scale);

/// Text form for tables and logs: `true`, `42`, `1.5`, `abc`, `<3 bytes>`, `<none>`,
/// `{k=v, ...}`, `[a, b]`.
std::string to_string(const field_value& v);

struct field {
  std::string key;
  field_value value;
};

using field_table = std::vector<field>;

/// Tables and arrays nest at most this many levels below a top-level table (arguments, headers)
/// at every door: AMQP, HTTP and Cap'n Proto. Whatever a door accepts must be stored, listed and
/// read back, and a Cap'n Proto reader (ours, and by default every other language's) stops at 64
/// pointers deep: two per level of table, and a listing's envelope above them.
constexpr int max_field_depth = 16;

/// How many levels of tables and arrays nest below `table` (0 when none does); counted with a
/// work list, not recursion.
int field_depth(const field_table& table);

/// "" when `table` nests at most max_field_depth levels; else a sentence naming `what` ("queue
/// arguments", "message headers") and the limit.
std::string check_field_depth(const std::string& what, const field_table& table);

/// The entry for `key`, or nullptr.
const field_value* find_field(const field_table& table, const std::string& key);

/// Same keys with equal values, in any order.
bool same_table(const field_table& a, const field_table& b);

/// The first key (in key order) whose value differs between two tables, or is in one only;
/// empty when they are the same table.
std::string first_difference(const field_table& a, const field_table& b);

/// Message properties as AMQP 0-9-1's property flag bits, so the AMQP door passes them through
/// unchanged (RabbitMQ hands back the flags a publisher set).
namespace property_flag {
constexpr uint16_t content_type = 1u << 15;
constexpr uint16_t content_encoding = 1u << 14;
constexpr uint16_t headers = 1u << 13;
constexpr uint16_t delivery_mode = 1u << 12;
constexpr uint16_t priority = 1u << 11;
constexpr uint16_t correlation_id = 1u << 10;
constexpr uint16_t reply_to = 1u << 9;
constexpr uint16_t expiration = 1u << 8;
constexpr uint16_t message_id = 1u << 7;
constexpr uint16_t timestamp = 1u << 6;
constexpr uint16_t type = 1u << 5;
constexpr uint16_t user_id = 1u << 4;
constexpr uint16_t app_id = 1u << 3;
constexpr uint16_t all = 0xfff8;
}  // namespace property_flag

struct message_properties {
  /// Properties the publisher set to their default value (delivery mode 1, priority 0,
  /// timestamp 0, empty text or headers), as property_flag bits. A property with any other value
  /// is present anyway, so this is 0 for nearly every message and costs nothing.
  uint16_t set_to_default = 0;
  bool persistent = false;
  std::string content_type;
  std::string content_encoding;
  field_table headers;
  uint8_t priority = 0;
  std::string correlation_id;
  std::string reply_to;
  std::string expiration;
  std::string message_id;  // the application's own id
  int64_t timestamp = 0;
  std::string type;
  std::string user_id;
  std::string app_id;
};

/// A text property: its name (as RabbitMQ's management API and AMQP's spec write it), where
/// message_properties keeps it, and its flag.
struct text_property {
  const char* name;
  std::string message_properties::*field;
  uint16_t flag;
};
/// Every text property, in AMQP's order.
extern const std::array<text_property, 9> text_properties;

/// Heap bytes `table` takes: its entries, their strings and what nests in them, counted with a
/// work list, not recursion.
uint64_t heap_bytes(const field_table& table);

/// True when `p` carries nothing but its delivery mode (1 or 2, or none).
bool only_delivery_mode(const message_properties& p);

/// The property_flag bits of what `p` carries: properties with other than their default value
/// (a persistent message's delivery mode 2 among them), and those in set_to_default.
uint16_t present_properties(const message_properties& p);

/// A message inside the broker. Kept small because queues hold millions of them: properties
/// other than the delivery mode are stored only when a message has any, shared between copies.
struct message {
  warren::message_id id;
  std::string exchange;
  std::string routing_key;
  std::string body;
  bool mandatory = false;
  bool dead_lettered = false;  // this copy is on its way from a dead-lettering queue (not stored)

  bool persistent() const { return persistent_; }
  /// The message's properties; defaults (with its delivery mode) when it carries none.
  const message_properties& properties() const;
  void set_properties(message_properties p);
  /// What this message keeps on the heap beyond its body and the object itself: its exchange
  /// and routing key when they do not fit inline, and its properties with their headers (a
  /// field takes about 120 bytes before its strings). What a queue holding it is charged for.
  uint64_t heap_bytes() const;

  // Serialized by value (between nodes); the properties travel whole and a message without any
  // arrives without any.
  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, message& x) {
    bool has_properties = x.properties_ != nullptr;
    if constexpr (Inspector::writes_state) {
      message_properties loaded;
      return inspect_then(
          f,
          [&] {
            x.properties_heap_ = has_properties ? properties_heap(loaded) : 0;
            x.properties_ = has_properties
                                ? std::make_shared<const message_properties>(std::move(loaded))
                                : nullptr;
          },
          x.id, x.exchange, x.routing_key, x.body, x.mandatory, x.dead_lettered, x.persistent_,
          x.mode_set_, has_properties, loaded);
    } else {
      message_properties none;
      // Saving only reads the shared properties.
      auto& props = has_properties ? const_cast<message_properties&>(*x.properties_) : none;
      return f(x.id, x.exchange, x.routing_key, x.body, x.mandatory, x.dead_lettered, x.persistent_,
               x.mode_set_, has_properties, props);
    }
  }

 private:
  static uint64_t properties_heap(const message_properties& p);

  bool persistent_ = false;
  bool mode_set_ = false;  // without properties_: the publisher set delivery mode 1 (or 2)
  std::shared_ptr<const message_properties> properties_;  // null: only the delivery mode
  uint64_t properties_heap_ = 0;  // what properties_ holds, worked out once (heap_bytes)
};

using message_ptr = std::shared_ptr<const message>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, field_value& x) {
  return f(x.kind, x.b, x.i, x.d, x.s, x.items, x.amqp_type, x.scale);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, field& x) {
  return f(x.key, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_properties& x) {
  return f(x.set_to_default, x.persistent, x.content_type, x.content_encoding, x.headers,
           x.priority, x.correlation_id, x.reply_to, x.expiration, x.message_id, x.timestamp,
           x.type, x.user_id, x.app_id);
}

/// Locally a message_ptr is shared, never copied; serialized, it is the message by value (a null
/// pointer stays null), and loading makes a new immutable message.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_ptr& x) {
  bool present = x != nullptr;
  if constexpr (Inspector::writes_state) {
    message loaded;
    return inspect_then(
        f, [&] { x = present ? std::make_shared<const message>(std::move(loaded)) : nullptr; },
        present, loaded);
  } else {
    message none;
    // Saving only reads the shared message.
    auto& msg = present ? const_cast<message&>(*x) : none;
    return f(present, msg);
  }
}

}  // namespace warren
