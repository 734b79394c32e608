#include "net/amqp/codec.hpp"

#include "core/message.hpp"

#include <cstdio>
#include <cstring>

namespace warren::amqp {

namespace {

// Nesting deeper than this is refused: a hostile table must not exhaust the stack, and what is
// taken must be storable and readable back (core/message.hpp).
constexpr int max_depth = warren::max_field_depth;

uint64_t load_be(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void store_be(std::string& out, uint64_t v, size_t n) {
  for (size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string describe_octet(uint8_t c) {
  char buf[16];
  if (c >= 0x21 && c < 0x7f)
    std::snprintf(buf, sizeof buf, "'%c' (0x%02x)", c, c);
  else
    std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

// --- value ---------------------------------------------------------------------------------------

value value::of_bool(bool b) {
  value v;
  v.type = 't';
  v.boolean = b;
  return v;
}

value value::of_long(int64_t i) {
  value v;
  v.type = 'l';
  v.integer = i;
  return v;
}

value value::of_int(int32_t i) {
  value v;
  v.type = 'I';
  v.integer = i;
  return v;
}

value value::of_string(std::string s) {
  value v;
  v.type = 'S';
  v.bytes = std::move(s);
  return v;
}

value value::of_table(table t) {
  value v;
  v.type = 'F';
  v.nested_table = std::make_shared<table>(std::move(t));
  return v;
}

bool operator==(const value& a, const value& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case 't':
      return a.boolean == b.boolean;
    case 'f':
    case 'd':
      return a.floating == b.floating;
    case 'D':
      return a.scale == b.scale && a.integer == b.integer;
    case 'S':
    case 'x':
      return a.bytes == b.bytes;
    case 'F':
      return *a.nested_table == *b.nested_table;
    case 'A':
      return *a.nested_array == *b.nested_array;
    case 'V':
      return true;
    default:
      return a.integer == b.integer;
  }
}

// --- reader --------------------------------------------------------------------------------------

void reader::need(size_t n, const char* what) {
  if (remaining() < n)
    throw protocol_error(reply_code::syntax_error, std::string("truncated ") + what + ": needs " +
                                                       std::to_string(n) + " byte(s), " +
                                                       std::to_string(remaining()) + " left");
}

std::string_view reader::take(size_t n) {
  need(n, "field");
  auto out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

uint8_t reader::octet() {
  need(1, "octet");
  return static_cast<uint8_t>(data_[pos_++]);
}

uint16_t reader::short_uint() {
  need(2, "short");
  auto v = load_be(data_.data() + pos_, 2);
  pos_ += 2;
  return static_cast<uint16_t>(v);
}

uint32_t reader::long_uint() {
  need(4, "long");
  auto v = load_be(data_.data() + pos_, 4);
  pos_ += 4;
  return static_cast<uint32_t>(v);
}

uint64_t reader::longlong_uint() {
  need(8, "long long");
  auto v = load_be(data_.data() + pos_, 8);
  pos_ += 8;
  return v;
}

std::string reader::short_string() {
  auto n = octet();
  need(n, "short string");
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}

std::string reader::long_string() {
  auto n = long_uint();
  need(n, "long string");
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}

std::vector<bool> reader::bits(size_t count) {
  std::vector<bool> out;
  for (size_t i = 0; i < count; i += 8) {
    auto byte = octet();
    for (size_t b = 0; b < 8 && i + b < count; ++b) out.push_back((byte >> b) & 1);
  }
  return out;
}

table reader::field_table() {
  auto n = long_uint();
  need(n, "field table");
  auto body = data_.substr(pos_, n);
  pos_ += n;
  return table_body(body, 0);
}

table reader::table_body(std::string_view bytes, int depth) {
  if (depth > max_depth)
    throw protocol_error(reply_code::syntax_error,
                         "field tables nested deeper than " + std::to_string(max_depth));
  reader inner(bytes);
  table out;
  while (!inner.done()) {
    auto key = inner.short_string();
    out.emplace_back(std::move(key), inner.field_value(depth));
  }
  return out;
}

value reader::field_value(int depth) {
  value v;
  v.type = static_cast<char>(octet());
  switch (v.type) {
    case 't':
      v.boolean = octet() != 0;
      break;
    case 'b':
      v.integer = static_cast<int8_t>(octet());
      break;
    case 'B':
      v.integer = octet();
      break;
    case 's':
      v.integer = static_cast<int16_t>(short_uint());
      break;
    case 'u':
      v.integer = short_uint();
      break;
    case 'I':
      v.integer = static_cast<int32_t>(long_uint());
      break;
    case 'i':
      v.integer = long_uint();
      break;
    case 'l':
    case 'L':  // 8 bytes; py-amqp (kombu, Celery) sends every integer past 32 bits as 'L'
    case 'T':
      v.integer = static_cast<int64_t>(longlong_uint());
      break;
    case 'f': {
      uint32_t bits = long_uint();
      float f;
      std::memcpy(&f, &bits, sizeof f);
      v.floating = f;
      break;
    }
    case 'd': {
      uint64_t bits = longlong_uint();
      std::memcpy(&v.floating, &bits, sizeof v.floating);
      break;
    }
    case 'D':
      v.scale = octet();
      v.integer = static_cast<int32_t>(long_uint());
      break;
    case 'S':
    case 'x':
      v.bytes = long_string();
      break;
    case 'F': {
      auto n = long_uint();
      auto body = take(n);
      v.nested_table = std::make_shared<table>(table_body(body, depth + 1));
      break;
    }
    case 'A': {
      if (depth + 1 > max_depth)
        throw protocol_error(reply_code::syntax_error,
                             "field arrays nested deeper than " + std::to_string(max_depth));
      auto n = long_uint();
      reader inner(take(n));
      v.nested_array = std::make_shared<array>();
      while (!inner.done()) v.nested_array->push_back(inner.field_value(depth + 1));
      break;
    }
    case 'V':
      break;
    default:
      throw protocol_error(reply_code::syntax_error,
                           "unknown field type " + describe_octet(static_cast<uint8_t>(v.type)) +
                               " in a field table");
  }
  return v;
}

// --- writer --------------------------------------------------------------------------------------

void writer::short_uint(uint16_t v) {
  store_be(out_, v, 2);
}
void writer::long_uint(uint32_t v) {
  store_be(out_, v, 4);
}
void writer::longlong_uint(uint64_t v) {
  store_be(out_, v, 8);
}

void writer::short_string(std::string_view s) {
  if (s.size() > 255)
    throw protocol_error(reply_code::syntax_error,
                         "a short string holds at most 255 bytes, got " + std::to_string(s.size()));
  octet(static_cast<uint8_t>(s.size()));
  raw(s);
}

void writer::long_string(std::string_view s) {
  long_uint(static_cast<uint32_t>(s.size()));
  raw(s);
}

void writer::bits(const std::vector<bool>& flags) {
  for (size_t i = 0; i < flags.size(); i += 8) {
    uint8_t byte = 0;
    for (size_t b = 0; b < 8 && i + b < flags.size(); ++b)
      if (flags[i + b]) byte |= static_cast<uint8_t>(1u << b);
    octet(byte);
  }
}

void writer::field_table(const table& t) {
  // The length goes first: write the body, then patch the length in.
  auto at = out_.size();
  long_uint(0);
  for (const auto& [key, v] : t) {
    short_string(key);
    field_value(v);
  }
  auto n = static_cast<uint32_t>(out_.size() - at - 4);
  for (int i = 0; i < 4; ++i) out_[at + i] = static_cast<char>((n >> (8 * (3 - i))) & 0xff);
}

void writer::field_value(const value& v) {
  octet(static_cast<uint8_t>(v.type));
  switch (v.type) {
    case 't':
      octet(v.boolean ? 1 : 0);
      break;
    case 'b':
    case 'B':
      octet(static_cast<uint8_t>(v.integer));
      break;
    case 's':
    case 'u':
      short_uint(static_cast<uint16_t>(v.integer));
      break;
    case 'I':
    case 'i':
      long_uint(static_cast<uint32_t>(v.integer));
      break;
    case 'l':
    case 'L':
    case 'T':
      longlong_uint(static_cast<uint64_t>(v.integer));
      break;
    case 'f': {
      float f = static_cast<float>(v.floating);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      long_uint(bits);
      break;
    }
    case 'd': {
      uint64_t bits;
      std::memcpy(&bits, &v.floating, sizeof bits);
      longlong_uint(bits);
      break;
    }
    case 'D':
      octet(v.scale);
      long_uint(static_cast<uint32_t>(v.integer));
      break;
    case 'S':
    case 'x':
      long_string(v.bytes);
      break;
    case 'F':
      field_table(v.nested_table ? *v.nested_table : table{});
      break;
    case 'A': {
      auto at = out_.size();
      long_uint(0);
      if (v.nested_array)
        for (const auto& item : *v.nested_array) field_value(item);
      auto n = static_cast<uint32_t>(out_.size() - at - 4);
      for (int i = 0; i < 4; ++i) out_[at + i] = static_cast<char>((n >> (8 * (3 - i))) & 0xff);
      break;
    }
    case 'V':
      break;
    default:
      throw protocol_error(reply_code::internal_error,
                           "cannot write field type '" + std::string(1, v.type) + "'");
  }
}

}  // namespace warren::amqp
