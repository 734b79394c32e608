#include "persistence/segment_store.hpp"

#include "actors/log.hpp"
#include "net/wire_fields.hpp"
#include "persistence/crc32c.hpp"
#include "persistence/data_dir.hpp"
#include "storage.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace warren::persistence {

namespace fs = std::filesystem;

namespace {

constexpr size_t header_size = 12;
constexpr size_t flags_offset = 8;
constexpr uint8_t flag_valid = 1;
constexpr uint8_t flag_delivered = 2;
constexpr uint32_t max_record = 256u << 20;

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

std::string encode_payload(uint64_t seq, const message& m) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::StoredMessage>();
  r.setSeq(seq);
  r.setId(kj::arrayPtr(m.id.bytes.data(), m.id.bytes.size()));
  r.setExchange(m.exchange);
  r.setRoutingKey(m.routing_key);
  net::write_properties(m.properties(), r.initProperties());
  r.setBody(net::bytes_of(m.body));
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

// Decodes a payload (copied into aligned words first: records sit at any offset).
std::shared_ptr<message> decode_payload(const char* data, size_t size, uint64_t& seq) {
  if (size % sizeof(capnp::word) != 0) throw std::runtime_error("payload size is not whole words");
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, size);
  capnp::FlatArrayMessageReader reader(words);
  auto r = reader.getRoot<storage::StoredMessage>();
  seq = r.getSeq();
  auto m = std::make_shared<message>();
  message_id_from_bytes(net::bytes(r.getId()), m->id);
  m->exchange = net::text(r.getExchange());
  m->routing_key = net::text(r.getRoutingKey());
  m->set_properties(net::read_properties(r.getProperties()));
  m->body = net::bytes(r.getBody());
  return m;
}

uint64_t decode_seq(const char* data, size_t size) {
  uint64_t seq = 0;
  decode_payload(data, size, seq);
  return seq;
}

bool read_file(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[1 << 16];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

bool write_all(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    auto n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

std::string segment_name(uint64_t first_seq) {
  auto digits = std::to_string(first_seq);
  return std::string(20 - std::min<size_t>(20, digits.size()), '0') + digits;
}

}  // namespace

bool parse_fsync_policy(const std::string& text, fsync_policy& out) {
  if (text == "batch")
    out = fsync_policy::batch;
  else if (text == "always")
    out = fsync_policy::always;
  else if (text == "never")
    out = fsync_policy::never;
  else
    return false;
  return true;
}

segment_store::segment_store(std::string dir, std::string label, options opts)
    : dir_(std::move(dir)), label_(std::move(label)), opts_(opts) {}

segment_store::~segment_store() {
  for (auto& [first, seg] : segments_)
    if (seg.fd >= 0) ::close(seg.fd);
}

std::string segment_store::path_of(uint64_t first_seq, const char* suffix) const {
  return dir_ + "/" + segment_name(first_seq) + suffix;
}

void segment_store::ensure_dir() {
  if (dir_ready_) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("cannot create " + dir_ + ": " + ec.message());
  sync_directory(fs::path(dir_).parent_path().string());
  dir_ready_ = true;
}

segment_store::segment& segment_store::open_segment(uint64_t first_seq) {
  ensure_dir();
  auto path = path_of(first_seq);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  auto& seg = segments_[first_seq];
  seg.first_seq = first_seq;
  seg.fd = fd;
  return seg;
}

std::vector<recovered_message> segment_store::recover(recovery_report& report) {
  std::vector<recovered_message> out;
  std::error_code ec;
  if (!fs::exists(dir_, ec)) return out;
  dir_ready_ = true;
  std::vector<uint64_t> names;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    auto name = entry.path().filename().string();
    if (entry.path().extension() == ".tmp") {
      log(log_level::info, "storage",
          "queue " + label_ + ": removing leftover " + name + " of an interrupted compaction");
      fs::remove(entry.path(), ec);
      continue;
    }
    if (entry.path().extension() != ".seg") continue;
    auto stem = entry.path().stem().string();
    if (stem.empty() || stem.find_first_not_of("0123456789") != std::string::npos) continue;
    names.push_back(std::stoull(stem));
  }
  std::sort(names.begin(), names.end());
  std::string data;
  for (size_t n = 0; n < names.size(); ++n) {
    auto first = names[n];
    bool last_segment = n + 1 == names.size();
    auto path = path_of(first);
    if (!read_file(path, data)) {
      log(log_level::error, "storage", "queue " + label_ + ": cannot read " + path);
      continue;
    }
    auto& seg = open_segment(first);
    ++report.segments;
    max_seq_ = std::max(max_seq_, first);
    size_t pos = 0;
    while (pos < data.size()) {
      size_t left = data.size() - pos;
      uint32_t len = left >= header_size ? get_u32(&data[pos]) : 0;
      bool header_ok = left >= header_size && len > 0 && len <= max_record && len % 8 == 0;
      bool complete = header_ok && header_size + len <= left;
      bool crc_ok = complete && crc32c(&data[pos + header_size], len) == get_u32(&data[pos + 4]);
      if (!crc_ok) {
        bool at_tail = !complete || header_size + len == left;
        if (at_tail) {
          // A torn write at the end: cut it away so appends continue from a clean record.
          log(log_level::warn, "storage",
              "queue " + label_ + ": segment " + segment_name(first) +
                  ".seg: torn record at offset " + std::to_string(pos) + ", truncating " +
                  std::to_string(left) + " bytes");
          if (::ftruncate(seg.fd, static_cast<off_t>(pos)) != 0)
            log(log_level::error, "storage",
                "queue " + label_ + ": truncate failed: " + std::strerror(errno));
          report.truncated_bytes += left;
          data.resize(pos);
          break;
        }
        ++report.corrupt_records;
        log(log_level::error, "storage",
            "queue " + label_ + ": segment " + segment_name(first) +
                ".seg: corrupt record at offset " + std::to_string(pos) +
                " (checksum mismatch), skipped");
        pos += header_size + len;
        ++seg.records;
        continue;
      }
      ++report.records;
      ++seg.records;
      auto flags = static_cast<uint8_t>(data[pos + flags_offset]);
      if (flags & flag_valid) {
        try {
          recovered_message r;
          r.msg = decode_payload(&data[pos + header_size], len, r.seq);
          r.delivered = (flags & flag_delivered) != 0;
          index_[r.seq] = {first, pos};
          max_seq_ = std::max(max_seq_, r.seq);
          ++seg.valid;
          out.push_back(std::move(r));
        } catch (const std::exception& e) {
          ++report.corrupt_records;
          log(log_level::error, "storage",
              "queue " + label_ + ": segment " + segment_name(first) +
                  ".seg: undecodable record at offset " + std::to_string(pos) + " (" + e.what() +
                  "), skipped");
        }
      } else {
        try {
          max_seq_ = std::max(max_seq_, decode_seq(&data[pos + header_size], len));
        } catch (const std::exception&) {
        }
      }
      pos += header_size + len;
    }
    seg.size = data.size();
    if (seg.valid == 0 && !last_segment) {
      drop_segment(first);
      ++report.removed_segments;
    } else if (last_segment) {
      active_ = first;
      buffer_base_ = seg.size;  // appends continue after the last good record
    } else if (seg.records > opts_.compact_min_records && seg.valid * 2 < seg.records) {
      candidates_.push_back(first);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const recovered_message& a, const recovered_message& b) { return a.seq < b.seq; });
  return out;
}

void segment_store::append(uint64_t seq, const message& m) {
  auto payload = encode_payload(seq, m);
  auto record_size = header_size + payload.size();
  if (active_ == 0 || segments_.count(active_) == 0) {
    open_segment(seq);
    active_ = seq;
    buffer_base_ = segments_[active_].size;
  } else {
    auto& seg = segments_[active_];
    uint64_t end = buffer_base_ + buffer_.size();
    if (end + record_size > opts_.segment_bytes && end > 0) {
      // Roll: what is buffered goes to the old segment first (a failure there is reported for
      // those records by the next sync; this one goes to the new segment either way).
      (void)seg;
      write_buffer();
      open_segment(seq);
      active_ = seq;
      buffer_base_ = 0;
    }
  }
  auto& seg = segments_[active_];
  char header[header_size] = {};
  put_u32(header, static_cast<uint32_t>(payload.size()));
  put_u32(header + 4, crc32c(payload.data(), payload.size()));
  header[flags_offset] = static_cast<char>(flag_valid);
  index_[seq] = {active_, buffer_base_ + buffer_.size()};
  buffer_.append(header, header_size);
  buffer_ += payload;
  buffered_seqs_.push_back(seq);
  batch_seqs_.push_back(seq);
  ++seg.records;
  ++seg.valid;
  max_seq_ = std::max(max_seq_, seq);
}

bool segment_store::write_buffer() {
  if (buffer_.empty()) return true;
  auto& seg = segments_[active_];
  bool ok = write_all(seg.fd, buffer_.data(), buffer_.size(), buffer_base_);
  if (ok) {
    seg.size = buffer_base_ + buffer_.size();
    if (std::find(unsynced_fds_.begin(), unsynced_fds_.end(), seg.fd) == unsynced_fds_.end())
      unsynced_fds_.push_back(seg.fd);
  } else {
    last_error_ = std::string("write to ") + path_of(active_) + " failed: " + std::strerror(errno);
    log(log_level::error, "storage", "queue " + label_ + ": " + last_error_);
    // Nothing of this batch is stored: forget it and cut off whatever part reached the file.
    if (::ftruncate(seg.fd, static_cast<off_t>(buffer_base_)) != 0) {
      // The file keeps a partial record; recovery truncates such a tail.
    }
    for (auto seq : buffered_seqs_) {
      index_.erase(seq);
      --seg.records;
      --seg.valid;
      failing_.push_back(seq);
    }
  }
  buffer_base_ = seg.size;
  buffer_.clear();
  buffered_seqs_.clear();
  return ok;
}

void segment_store::apply_flag_edits() {
  for (const auto& edit : flag_edits_) {
    auto i = index_.find(edit.seq);
    if (i == index_.end()) continue;
    auto s = segments_.find(i->second.segment);
    if (s == segments_.end()) continue;
    uint8_t flags = flag_valid | ((edit.set & flag_delivered) ? flag_delivered : 0);
    if (edit.clear & flag_valid) flags = 0;
    auto offset = i->second.offset + flags_offset;
    if (!write_all(s->second.fd, reinterpret_cast<const char*>(&flags), 1, offset))
      log(log_level::warn, "storage",
          "queue " + label_ + ": could not update a record's flags: " + std::strerror(errno));
    if (edit.clear & flag_valid) {
      index_.erase(i);
      after_invalidate(s->second);
    }
  }
  flag_edits_.clear();
}

bool segment_store::sync(bool durable) {
  // Flag edits of records still in the buffer are made in the buffer: a record appended and
  // acked in the same batch is written already dead.
  for (auto& edit : flag_edits_) {
    auto i = index_.find(edit.seq);
    if (i == index_.end() || i->second.segment != active_ || i->second.offset < buffer_base_ ||
        i->second.offset - buffer_base_ >= buffer_.size())
      continue;
    auto& flags = buffer_[i->second.offset - buffer_base_ + flags_offset];
    if (edit.clear & flag_valid) flags = 0;
    if (edit.set & flag_delivered) flags = static_cast<char>(flags | flag_delivered);
  }
  write_buffer();
  apply_flag_edits();
  if (durable) {
    for (int fd : unsynced_fds_) {
      if (::fdatasync(fd) != 0) {
        last_error_ = std::string("fdatasync failed: ") + std::strerror(errno);
        log(log_level::error, "storage", "queue " + label_ + ": " + last_error_);
        // Whether those bytes are on disk is unknown: the batch must not be confirmed.
        failing_.insert(failing_.end(), batch_seqs_.begin(), batch_seqs_.end());
        break;
      }
    }
    unsynced_fds_.clear();
  }
  batch_seqs_.clear();
  failed_ = std::move(failing_);
  failing_.clear();
  return failed_.empty();
}

void segment_store::remove(uint64_t seq) {
  if (index_.count(seq) != 0) flag_edits_.push_back({seq, flag_valid, 0});
}

void segment_store::mark_delivered(uint64_t seq) {
  if (index_.count(seq) != 0) flag_edits_.push_back({seq, 0, flag_delivered});
}

void segment_store::after_invalidate(segment& seg) {
  if (seg.valid > 0) --seg.valid;
  if (seg.first_seq == active_) return;
  if (seg.valid == 0) {
    drop_segment(seg.first_seq);
  } else if (seg.records > opts_.compact_min_records && seg.valid * 2 < seg.records &&
             std::find(candidates_.begin(), candidates_.end(), seg.first_seq) ==
                 candidates_.end()) {
    candidates_.push_back(seg.first_seq);
  }
}

void segment_store::drop_segment(uint64_t first_seq) {
  auto s = segments_.find(first_seq);
  if (s == segments_.end()) return;
  if (s->second.fd >= 0) {
    unsynced_fds_.erase(std::remove(unsynced_fds_.begin(), unsynced_fds_.end(), s->second.fd),
                        unsynced_fds_.end());
    ::close(s->second.fd);
  }
  ::unlink(path_of(first_seq).c_str());
  segments_.erase(s);
  candidates_.erase(std::remove(candidates_.begin(), candidates_.end(), first_seq),
                    candidates_.end());
}

bool segment_store::compact_one() {
  while (!candidates_.empty()) {
    auto first = candidates_.back();
    candidates_.pop_back();
    auto s = segments_.find(first);
    if (s == segments_.end() || first == active_) continue;
    auto& seg = s->second;
    if (!(seg.records > opts_.compact_min_records && seg.valid * 2 < seg.records)) continue;
    apply_flag_edits();
    std::string data;
    auto path = path_of(first);
    if (!read_file(path, data)) return false;
    std::string out;
    std::vector<std::pair<uint64_t, uint64_t>> moved;  // seq, new offset
    for (size_t pos = 0; pos + header_size <= data.size();) {
      uint32_t len = get_u32(&data[pos]);
      if (len == 0 || pos + header_size + len > data.size()) break;
      auto flags = static_cast<uint8_t>(data[pos + flags_offset]);
      if (flags & flag_valid) {
        uint64_t seq = 0;
        try {
          seq = decode_seq(&data[pos + header_size], len);
        } catch (const std::exception&) {
          pos += header_size + len;
          continue;
        }
        auto i = index_.find(seq);
        if (i != index_.end() && i->second.segment == first) {
          moved.emplace_back(seq, out.size());
          out.append(data, pos, header_size + len);
        }
      }
      pos += header_size + len;
    }
    // Copy, sync, rename over, sync the folder: a crash leaves the old or the new file whole.
    auto tmp = path_of(first, ".seg.tmp");
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, out.data(), out.size(), 0) && ::fdatasync(fd) == 0;
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      log(log_level::error, "storage",
          "queue " + label_ + ": compacting " + segment_name(first) +
              ".seg failed: " + std::strerror(errno));
      if (fd >= 0) ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    sync_directory(dir_);
    ::close(seg.fd);
    seg.fd = fd;
    unsynced_fds_.erase(std::remove(unsynced_fds_.begin(), unsynced_fds_.end(), seg.fd),
                        unsynced_fds_.end());
    log(log_level::info, "storage",
        "queue " + label_ + ": compacted segment " + segment_name(first) + ".seg from " +
            std::to_string(seg.records) + " to " + std::to_string(moved.size()) + " records");
    for (const auto& [seq, offset] : moved) index_[seq] = {first, offset};
    seg.records = static_cast<uint32_t>(moved.size());
    seg.valid = seg.records;
    seg.size = out.size();
    return true;
  }
  return true;
}

void segment_store::destroy() {
  for (auto& [first, seg] : segments_)
    if (seg.fd >= 0) ::close(seg.fd);
  segments_.clear();
  index_.clear();
  buffer_.clear();
  buffered_seqs_.clear();
  flag_edits_.clear();
  unsynced_fds_.clear();
  candidates_.clear();
  active_ = 0;
  remove_tree(dir_);
  dir_ready_ = false;
}

uint64_t segment_store::bytes_on_disk() const {
  uint64_t total = 0;
  for (const auto& [first, seg] : segments_) total += seg.size;
  return total;
}

}  // namespace warren::persistence
