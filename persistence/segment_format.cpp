#include "persistence/segment_format.hpp"

#include "core/wire_fields.hpp"
#include "persistence/crc32c.hpp"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace warren::persistence::format {

namespace {

constexpr char segment_magic[8] = {'W', 'R', 'N', 'S', 'E', 'G', '0', '2'};
constexpr char marks_magic[8] = {'W', 'R', 'N', 'A', 'C', 'K', '0', '2'};
constexpr char index_magic[8] = {'W', 'R', 'N', 'I', 'D', 'X', '0', '2'};
constexpr size_t index_entry_size = 21;
constexpr size_t index_frame_entries = 65536;
constexpr size_t run_size = 12;
constexpr uint8_t flag_persistent = 1;
constexpr uint8_t flag_timed = 2;
constexpr uint8_t flag_mode_set = 4;  // transient, published with delivery mode 1

template <class T>
void put_le(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

template <class T>
T get_le(const char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

const char* magic_of(file_kind kind) {
  switch (kind) {
    case file_kind::segment:
      return segment_magic;
    case file_kind::marks:
      return marks_magic;
    case file_kind::index:
      return index_magic;
  }
  return segment_magic;
}

uint32_t frame_crc(const char* length_field, std::string_view payload) {
  return crc32c(payload.data(), payload.size(), crc32c(length_field, 4));
}

void put_short_string(std::string& out, const std::string& s, const char* what) {
  if (s.size() > 255)
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(s.size()) +
                                " bytes cannot be stored (255 at most)");
  out.push_back(static_cast<char>(s.size()));
  out += s;
}

std::string encode_properties(const message_properties& p) {
  if (only_delivery_mode(p)) return {};
  capnp::MallocMessageBuilder builder;
  wire::write_properties(p, builder.initRoot<rpc::Properties>());
  kj::VectorOutputStream out;
  capnp::writePackedMessage(out, builder);
  auto bytes = out.getArray();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

message_properties decode_properties(std::string_view packed) {
  kj::ArrayInputStream in(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(packed.data()), packed.size()));
  capnp::PackedMessageReader reader(in);
  return wire::read_properties(reader.getRoot<rpc::Properties>());
}

// Reads a length-prefixed string at `pos`, advancing it; throws when it runs past the end.
template <class Length>
std::string take(std::string_view payload, size_t& pos, const char* what) {
  if (pos + sizeof(Length) > payload.size())
    throw std::runtime_error(std::string(what) + " length runs past the payload");
  auto n = get_le<Length>(payload.data() + pos);
  pos += sizeof(Length);
  if (n > payload.size() - pos)
    throw std::runtime_error(std::string(what) + " runs past the payload");
  std::string out(payload.substr(pos, n));
  pos += n;
  return out;
}

}  // namespace

std::string file_header(file_kind kind, uint64_t first_seq) {
  std::string out(magic_of(kind), 8);
  put_le(out, first_seq);
  return out;
}

std::string check_file_header(std::string_view data, file_kind kind, uint64_t first_seq) {
  if (data.size() < file_header_size)
    return "file header missing (" + std::to_string(data.size()) + " bytes)";
  if (std::memcmp(data.data(), magic_of(kind), 8) != 0) return "file header damaged (bad magic)";
  auto found = get_le<uint64_t>(data.data() + 8);
  if (found != first_seq)
    return "file header names sequence " + std::to_string(found) + ", not " +
           std::to_string(first_seq);
  return {};
}

void append_frame(std::string& out, std::string_view payload) {
  std::string length;
  put_le(length, static_cast<uint32_t>(payload.size()));
  put_le(out, frame_crc(length.data(), payload));
  out += length;
  out.append(payload.data(), payload.size());
}

std::string encode_message(uint64_t seq, const message& m, int64_t enqueued_at_ms) {
  auto props = encode_properties(m.properties());
  std::string out;
  out.reserve(min_message_payload + 8 + m.exchange.size() + m.routing_key.size() + props.size() +
              m.body.size());
  put_le(out, seq);
  out.append(reinterpret_cast<const char*>(m.id.bytes.data()), m.id.bytes.size());
  bool mode_set = (m.properties().set_to_default & property_flag::delivery_mode) != 0;
  uint8_t flags = (m.persistent() ? flag_persistent : 0) | (enqueued_at_ms ? flag_timed : 0) |
                  (mode_set ? flag_mode_set : 0);
  out.push_back(static_cast<char>(flags));
  if (enqueued_at_ms != 0) put_le(out, static_cast<uint64_t>(enqueued_at_ms));
  put_short_string(out, m.exchange, "exchange name");
  put_short_string(out, m.routing_key, "routing key");
  put_le(out, static_cast<uint32_t>(props.size()));
  out += props;
  out += m.body;
  return out;
}

uint64_t payload_seq(std::string_view payload) {
  return payload.size() >= 8 ? get_le<uint64_t>(payload.data()) : 0;
}

bool summarize_payload(std::string_view payload, payload_summary& out) {
  if (payload.size() < min_message_payload) return false;
  out.seq = get_le<uint64_t>(payload.data());
  auto flags = static_cast<uint8_t>(payload[24]);
  out.persistent = (flags & flag_persistent) != 0;
  size_t pos = 25 + ((flags & flag_timed) ? 8 : 0);
  for (size_t width : {1, 1, 4}) {
    if (pos + width > payload.size()) return false;
    uint64_t n =
        width == 1 ? static_cast<uint8_t>(payload[pos]) : get_le<uint32_t>(payload.data() + pos);
    pos += width;
    if (n > payload.size() - pos) return false;
    pos += n;
  }
  out.body_bytes = payload.size() - pos;
  return true;
}

std::shared_ptr<message> decode_message(std::string_view payload, uint64_t& seq,
                                        int64_t* enqueued_at_ms) {
  if (payload.size() < min_message_payload)
    throw std::runtime_error("message record of " + std::to_string(payload.size()) +
                             " bytes is too short");
  seq = get_le<uint64_t>(payload.data());
  auto m = std::make_shared<message>();
  static_assert(sizeof(m->id.bytes) == 16);
  std::memcpy(m->id.bytes.data(), payload.data() + 8, 16);
  auto flags = static_cast<uint8_t>(payload[24]);
  bool persistent = (flags & flag_persistent) != 0;
  size_t pos = 25;
  int64_t enqueued_at = 0;
  if (flags & flag_timed) {
    if (payload.size() < min_message_payload + 8)
      throw std::runtime_error("enqueue time runs past the payload");
    enqueued_at = static_cast<int64_t>(get_le<uint64_t>(payload.data() + pos));
    pos += 8;
  }
  if (enqueued_at_ms != nullptr) *enqueued_at_ms = enqueued_at;
  m->exchange = take<uint8_t>(payload, pos, "exchange name");
  m->routing_key = take<uint8_t>(payload, pos, "routing key");
  auto props = take<uint32_t>(payload, pos, "properties");
  message_properties p;
  if (!props.empty()) {
    try {
      p = decode_properties(props);
    } catch (const kj::Exception& e) {
      throw std::runtime_error("properties do not decode: " +
                               std::string(e.getDescription().cStr()));
    }
  }
  p.persistent = persistent;
  if (flags & flag_mode_set) p.set_to_default |= property_flag::delivery_mode;
  m->set_properties(std::move(p));
  m->body = std::string(payload.substr(pos));
  return m;
}

std::string encode_marks(mark kind, std::vector<uint64_t> seqs) {
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  std::string out(1, static_cast<char>(kind));
  for (size_t i = 0; i < seqs.size();) {
    size_t j = i + 1;
    while (j < seqs.size() && seqs[j] == seqs[j - 1] + 1 && j - i < UINT32_MAX) ++j;
    put_le(out, seqs[i]);
    put_le(out, static_cast<uint32_t>(j - i));
    i = j;
  }
  return out;
}

bool decode_marks(std::string_view payload, const std::function<void(mark, uint64_t)>& each) {
  if (payload.empty() || (payload.size() - 1) % run_size != 0) return false;
  auto kind = static_cast<mark>(payload[0]);
  if (kind != mark::acked && kind != mark::delivered) return false;
  for (size_t pos = 1; pos < payload.size(); pos += run_size) {
    auto first = get_le<uint64_t>(payload.data() + pos);
    auto count = get_le<uint32_t>(payload.data() + pos + 8);
    for (uint64_t s = first; s < first + count; ++s) each(kind, s);
  }
  return true;
}

std::string_view frame_payload(std::string_view data, size_t offset, uint32_t length) {
  if (offset > data.size() || data.size() - offset < frame_header_size + uint64_t{length})
    return {};
  if (get_le<uint32_t>(data.data() + offset + 4) != length) return {};
  auto payload = data.substr(offset + frame_header_size, length);
  if (frame_crc(data.data() + offset + 4, payload) != get_le<uint32_t>(data.data() + offset))
    return {};
  return payload;
}

scan_result scan_frames(std::string_view data, size_t start,
                        const std::function<bool(std::string_view payload)>& plausible) {
  scan_result out;
  auto frame_at = [&](size_t pos, uint32_t& length) {
    if (data.size() - pos < frame_header_size) return false;
    length = get_le<uint32_t>(data.data() + pos + 4);
    if (length == 0 || length > max_frame || length > data.size() - pos - frame_header_size)
      return false;
    auto payload = data.substr(pos + frame_header_size, length);
    return plausible(payload) &&
           frame_crc(data.data() + pos + 4, payload) == get_le<uint32_t>(data.data() + pos);
  };
  size_t pos = start;
  while (pos < data.size()) {
    uint32_t length = 0;
    if (frame_at(pos, length)) {
      out.frames.push_back({pos, length});
      pos += frame_header_size + length;
      continue;
    }
    size_t next = pos + 1;
    while (next < data.size() && !frame_at(next, length)) ++next;
    out.damaged.push_back({pos, next - pos});
    pos = next;
  }
  out.torn_tail =
      !out.damaged.empty() && out.damaged.back().offset + out.damaged.back().bytes == data.size();
  return out;
}

std::string encode_index(uint64_t first_seq, uint64_t segment_size,
                         const std::vector<index_entry>& entries) {
  auto out = file_header(file_kind::index, first_seq);
  size_t i = 0;
  do {
    size_t n = std::min(index_frame_entries, entries.size() - i);
    std::string payload;
    payload.reserve(12 + n * index_entry_size);
    put_le(payload, segment_size);
    put_le(payload, static_cast<uint32_t>(n));
    for (size_t end = i + n; i < end; ++i) {
      const auto& e = entries[i];
      put_le(payload, e.seq);
      put_le(payload, e.offset);
      put_le(payload, e.length);
      put_le(payload, e.body_bytes);
      payload.push_back(static_cast<char>(e.persistent ? flag_persistent : 0));
    }
    append_frame(out, payload);
  } while (i < entries.size());
  return out;
}

std::string decode_index(std::string_view data, uint64_t first_seq, uint64_t& segment_size,
                         std::vector<index_entry>& out) {
  if (auto problem = check_file_header(data, file_kind::index, first_seq); !problem.empty())
    return problem;
  size_t pos = file_header_size;
  bool first_frame = true;
  while (pos < data.size()) {
    if (data.size() - pos < frame_header_size) return "torn frame at offset " + std::to_string(pos);
    auto length = get_le<uint32_t>(data.data() + pos + 4);
    auto payload = frame_payload(data, pos, length);
    if (payload.size() < 12) return "damaged frame at offset " + std::to_string(pos);
    auto size = get_le<uint64_t>(payload.data());
    auto n = get_le<uint32_t>(payload.data() + 8);
    if (payload.size() != 12 + uint64_t{n} * index_entry_size)
      return "frame at offset " + std::to_string(pos) + " has the wrong length";
    if (!first_frame && size != segment_size) return "frames disagree on the segment's size";
    segment_size = size;
    first_frame = false;
    for (size_t k = 0; k < n; ++k) {
      const char* p = payload.data() + 12 + k * index_entry_size;
      index_entry e{get_le<uint64_t>(p), get_le<uint32_t>(p + 8), get_le<uint32_t>(p + 12),
                    get_le<uint32_t>(p + 16), (p[20] & flag_persistent) != 0};
      bool in_order = out.empty() || out.back().seq < e.seq;
      bool inside = e.seq >= first_seq && e.offset >= file_header_size &&
                    uint64_t{e.offset} + frame_header_size + e.length <= segment_size;
      if (!in_order || !inside) return "entry for sequence " + std::to_string(e.seq) + " is off";
      out.push_back(e);
    }
    pos += frame_header_size + length;
  }
  if (first_frame) return "no entries";
  return {};
}

std::string file_stem(uint64_t first_seq) {
  auto digits = std::to_string(first_seq);
  return std::string(20 - std::min<size_t>(20, digits.size()), '0') + digits;
}

bool parse_file_stem(std::string_view stem, uint64_t& out) {
  if (stem.size() != 20 || stem.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  auto [end, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), out);
  return ec == std::errc() && end == stem.data() + stem.size();
}

}  // namespace warren::persistence::format
