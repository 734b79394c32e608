// AMQP 0-9-1 wire primitives: big-endian integers, short and long strings, bits, and field
// tables with every field type RabbitMQ's clients send (the 0-9-1 errata set: t b B s u I i l f
// d D S x A T F V). Pure code: no sockets, no actors.
//
// Decoding never trusts a length: every read checks what is left and throws protocol_error
// (SYNTAX_ERROR for malformed arguments; the frame layer uses FRAME_ERROR for framing).
#pragma once

#include "core/reply_code.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warren::amqp {

/// Malformed input: the connection is closed with `code` and this text.
struct protocol_error : std::runtime_error {
  protocol_error(reply_code c, const std::string& text) : std::runtime_error(text), code(c) {}
  reply_code code;
};

/// An octet for error messages: 'x' (0x78), or 0x01 when not printable.
std::string describe_octet(uint8_t c);

struct value;
using table = std::vector<std::pair<std::string, value>>;
using array = std::vector<value>;

/// One field value, keeping its AMQP type so that what a client sent goes back unchanged.
struct value {
  char type = 'V';  // the AMQP type tag
  bool boolean = false;
  int64_t integer = 0;  // b B s u I i l T (T: seconds since the epoch), and D's unscaled value
  uint8_t scale = 0;    // D: decimal places
  double floating = 0;  // f d
  std::string bytes;    // S x
  std::shared_ptr<table> nested_table;  // F
  std::shared_ptr<array> nested_array;  // A

  static value of_bool(bool b);
  static value of_long(int64_t i);  // type 'l'
  static value of_int(int32_t i);   // type 'I'
  static value of_string(std::string s);
  static value of_table(table t);

  friend bool operator==(const value& a, const value& b);
  friend bool operator!=(const value& a, const value& b) { return !(a == b); }
};

/// Reads primitives from a byte range; every read checks the remaining length.
class reader {
 public:
  explicit reader(std::string_view bytes) : data_(bytes) {}

  uint8_t octet();
  uint16_t short_uint();
  uint32_t long_uint();
  uint64_t longlong_uint();
  std::string short_string();
  std::string long_string();
  table field_table();
  /// `count` consecutive bit arguments packed into octets, as the spec packs them.
  std::vector<bool> bits(size_t count);
  std::string_view take(size_t n);

  size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return remaining() == 0; }

 private:
  value field_value(int depth);
  table table_body(std::string_view bytes, int depth);
  void need(size_t n, const char* what);

  std::string_view data_;
  size_t pos_ = 0;
};

/// Appends primitives to a string.
class writer {
 public:
  void octet(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void short_uint(uint16_t v);
  void long_uint(uint32_t v);
  void longlong_uint(uint64_t v);
  /// Throws protocol_error when `s` is longer than 255 bytes.
  void short_string(std::string_view s);
  void long_string(std::string_view s);
  void field_table(const table& t);
  void bits(const std::vector<bool>& flags);
  void raw(std::string_view bytes) { out_.append(bytes.data(), bytes.size()); }

  std::string& bytes() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void field_value(const value& v);
  std::string out_;
};

}  // namespace warren::amqp
