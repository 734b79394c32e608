#include "persistence/raft_wire_check.hpp"

#include <algorithm>
#include <cstring>

namespace warren::persistence {

namespace {

// raft's message types (raft.h: RAFT_IO_*) and entry types (RAFT_COMMAND, ...).
enum : uint64_t {
  append_entries = 1,
  append_entries_result,
  request_vote,
  request_vote_result,
  install_snapshot,
  timeout_now
};
constexpr uint8_t first_entry_type = 1, last_entry_type = 3;
constexpr uint8_t configuration_format = 1;

uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return v;
}

uint32_t u32_at(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return v;
}

}  // namespace

bool raft_wire_check::fail(std::string why) {
  if (problem_.empty()) problem_ = std::move(why);
  return false;
}

bool raft_wire_check::feed(const char* data, size_t size) {
  while (size > 0 && problem_.empty()) {
    if (at_ == part::payload) {
      auto n = static_cast<size_t>(std::min<uint64_t>(payload_left_, size));
      payload_left_ -= n;
      data += n;
      size -= n;
      if (payload_left_ == 0) at_ = part::preamble;
      continue;
    }
    size_t want = at_ == part::preamble ? 16 : static_cast<size_t>(header_len_);
    size_t n = std::min(want - buffer_.size(), size);
    buffer_.append(data, n);
    data += n;
    size -= n;
    if (buffer_.size() < want) break;
    bool sound = at_ == part::preamble ? preamble_done() : header_done();
    buffer_.clear();
    if (!sound) return false;
  }
  return problem_.empty();
}

// The type and the header's length, by what raft_uv's decoder of that type reads.
bool raft_wire_check::preamble_done() {
  type_ = u64_at(buffer_, 0);
  header_len_ = u64_at(buffer_, 8);
  auto len = header_len_;
  bool fits = false;
  switch (type_) {
    case append_entries:
      fits = len >= 40;
      break;
    case append_entries_result:
      fits = len >= 24;
      break;
    case request_vote:
      fits = len == 32 || len >= 40;
      break;
    case request_vote_result:
      fits = len == 16 || len >= 24;
      break;
    case install_snapshot:
      fits = len >= 40 + 9 + 8;
      break;
    case timeout_now:
      fits = len >= 24;
      break;
    default:
      return fail("message type " + std::to_string(type_));
  }
  if (!fits || len > max_header_bytes)
    return fail("a header of " + std::to_string(len) + " bytes for message type " +
                std::to_string(type_));
  at_ = part::header;
  return true;
}

bool raft_wire_check::header_done() {
  payload_left_ = 0;
  if (type_ == append_entries && !append_entries_header()) return false;
  if (type_ == install_snapshot && !install_snapshot_header()) return false;
  at_ = payload_left_ > 0 ? part::payload : part::preamble;
  return true;
}

// Four u64, the entry count, then 16 bytes per entry: term, type, 3 unused, u32 size. raft sizes
// the header for one more u64 than it writes, so it may run longer than that.
bool raft_wire_check::append_entries_header() {
  uint64_t n = u64_at(buffer_, 32);
  if (n > max_entries || 40 + 16 * n > header_len_)
    return fail(std::to_string(n) + " entries in a header of " + std::to_string(header_len_) +
                " bytes");
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = 40 + static_cast<size_t>(i) * 16;
    auto type = static_cast<uint8_t>(buffer_[at + 8]);
    uint32_t len = u32_at(buffer_, at + 12);
    if (type < first_entry_type || type > last_entry_type)
      return fail("entry type " + std::to_string(type));
    if (len % 8 != 0) return fail("an entry of " + std::to_string(len) + " bytes, not padded");
    payload_left_ += len;
  }
  if (payload_left_ > max_payload_bytes)
    return fail(std::to_string(payload_left_) + " bytes of entries");
  return true;
}

// Four u64, the configuration's length, the configuration, the snapshot's length (and, as for
// append-entries, room raft sizes and does not write).
bool raft_wire_check::install_snapshot_header() {
  uint64_t conf_len = u64_at(buffer_, 32);
  if (conf_len < 9 || conf_len > header_len_ || 40 + conf_len + 8 > header_len_)
    return fail("a configuration of " + std::to_string(conf_len) + " bytes in a header of " +
                std::to_string(header_len_));
  const size_t start = 40, end = start + static_cast<size_t>(conf_len);
  if (static_cast<uint8_t>(buffer_[start]) != configuration_format)
    return fail("configuration format " + std::to_string(static_cast<uint8_t>(buffer_[start])));
  uint64_t servers = u64_at(buffer_, start + 1);
  if (servers > max_servers) return fail(std::to_string(servers) + " servers");
  size_t at = start + 9;
  for (uint64_t i = 0; i < servers; ++i) {
    if (end - at < 8 + 1 + 1) return fail("a configuration cut short");
    at += 8;  // the server's id
    auto nul = buffer_.find('\0', at);
    if (nul == std::string::npos || nul >= end - 1) return fail("a configuration cut short");
    at = nul + 1 + 1;  // the address, its NUL, the role
  }
  payload_left_ = u64_at(buffer_, end);
  if (payload_left_ > max_payload_bytes)
    return fail("a snapshot of " + std::to_string(payload_left_) + " bytes");
  return true;
}

}  // namespace warren::persistence
