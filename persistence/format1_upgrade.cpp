#include "persistence/format1_upgrade.hpp"

#include "core/log.hpp"
#include "core/wire_fields.hpp"
#include "persistence/crc32c.hpp"
#include "persistence/file_io.hpp"
#include "persistence/segment_format.hpp"
#include "persistence/segment_store.hpp"
#include "storage.capnp.h"

#include <capnp/serialize.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

namespace warren::persistence {

namespace fs = std::filesystem;

namespace {

// Format 1's record: u32 length | u32 crc32c(payload) | u8 flags | 3 reserved | payload, the
// payload a Cap'n Proto StoredMessage of whole words.
constexpr size_t v1_header = 12;
constexpr uint8_t v1_valid = 1;
constexpr uint8_t v1_delivered = 2;

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

bool v1_record_at(const std::string& data, size_t pos, uint32_t& length) {
  if (data.size() - pos < v1_header) return false;
  length = get_u32(&data[pos]);
  return length > 0 && length % 8 == 0 && length <= format::max_frame &&
         length <= data.size() - pos - v1_header &&
         crc32c(&data[pos + v1_header], length) == get_u32(&data[pos + 4]);
}

std::shared_ptr<message> decode_v1(const char* data, size_t size, uint64_t& seq) {
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, size);
  capnp::FlatArrayMessageReader reader(words);
  auto r = reader.getRoot<storage::StoredMessage>();
  seq = r.getSeq();
  auto m = std::make_shared<message>();
  message_id_from_bytes(wire::bytes(r.getId()), m->id);
  m->exchange = wire::text(r.getExchange());
  m->routing_key = wire::text(r.getRoutingKey());
  m->set_properties(wire::read_properties(r.getProperties()));
  m->body = wire::bytes(r.getBody());
  return m;
}

struct v1_message {
  std::shared_ptr<message> msg;
  bool delivered = false;
};

// Reads one format-1 segment into `out` (by sequence number); returns the bytes it could not
// read, each run logged with file and offset.
size_t read_v1_segment(const std::string& path, const std::string& label,
                       std::map<uint64_t, v1_message>& out) {
  std::string data;
  if (int err = read_whole(path, data); err != 0)
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(err));
  size_t damaged = 0;
  for (size_t pos = 0; pos < data.size();) {
    uint32_t length = 0;
    if (!v1_record_at(data, pos, length)) {
      size_t next = pos + 1;
      while (next < data.size() && !v1_record_at(data, next, length)) ++next;
      log(log_level::error, "storage",
          "queue " + label + ": " + path + ": unreadable format-1 records at offset " +
              std::to_string(pos) + ", " + std::to_string(next - pos) + " byte(s) skipped");
      damaged += next - pos;
      pos = next;
      continue;
    }
    auto flags = static_cast<uint8_t>(data[pos + 8]);
    if (flags & v1_valid) {
      try {
        uint64_t seq = 0;
        auto m = decode_v1(&data[pos + v1_header], length, seq);
        out[seq] = {std::move(m), (flags & v1_delivered) != 0};
      } catch (const kj::Exception& e) {
        log(log_level::error, "storage",
            "queue " + label + ": " + path + ": undecodable format-1 record at offset " +
                std::to_string(pos) + ": " + e.getDescription().cStr());
        damaged += v1_header + length;
      }
    }
    pos += v1_header + length;
  }
  return damaged;
}

// Writes the messages as a new format-2 store in `target` and syncs it.
void write_v2(const std::string& target, const std::string& label,
              const std::map<uint64_t, v1_message>& messages) {
  segment_store store(target, label);
  recovery_report r;
  store.recover(r);
  size_t since_sync = 0;
  for (const auto& [seq, m] : messages) {
    store.append(seq, *m.msg);
    if (m.delivered) store.mark_delivered(seq);
    if (++since_sync == 10000) {
      since_sync = 0;
      if (!store.sync(false))
        throw std::runtime_error("cannot write " + target + ": " + store.last_error());
    }
  }
  if (!store.sync(true))
    throw std::runtime_error("cannot write " + target + ": " + store.last_error());
}

void rename_or_throw(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw std::runtime_error("cannot rename " + from + " to " + to + ": " + ec.message());
}

// Reads every segment of a format-1 folder; returns the bytes that could not be read.
size_t read_v1_folder(const std::string& folder, const std::string& label,
                      std::map<uint64_t, v1_message>& messages) {
  std::vector<std::string> segments;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.path().extension() == ".seg") segments.push_back(e.path().string());
  std::sort(segments.begin(), segments.end());
  size_t damaged = 0;
  for (const auto& path : segments) damaged += read_v1_segment(path, label, messages);
  return damaged;
}

// The originals an upgrade moved aside and a crash left under the temporary name: before its
// last rename (damaged originals become <folder>.format1-damaged) or before their removal. They
// go once the metadata records the upgrade, but only when they read clean: the next start
// cannot know which of the two the crash interrupted, so it looks again, and damaged originals
// are kept as the README promises.
void settle_originals(const std::string& folder, const std::string& label) {
  auto aside = folder + ".format1", kept = folder + ".format1-damaged";
  std::error_code ec;
  if (!fs::is_directory(aside, ec)) return;
  std::map<uint64_t, v1_message> ignored;
  if (read_v1_folder(aside, label, ignored) == 0) {
    fs::remove_all(aside, ec);
    return;
  }
  if (fs::exists(kept, ec)) {  // never over another copy: both stay for whoever looks
    log(log_level::warn, "storage",
        "queue " + label + ": damaged format-1 originals kept in " + aside + " (" + kept +
            " exists already)");
    return;
  }
  rename_or_throw(aside, kept);
  sync_directory(fs::path(folder).parent_path().string());
}

std::string queue_label(const stored_queue& q) {
  return "'" + q.spec.name + "' (vhost '" + q.vhost + "')";
}

}  // namespace

bool holds_format2(const std::string& folder) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    if (e.path().extension() != ".seg" && e.path().extension() != ".ack") continue;
    std::string head;
    if (read_whole(e.path().string(), head) != 0) continue;
    if (head.size() >= 8 &&
        (head.compare(0, 8, "WRNSEG02") == 0 || head.compare(0, 8, "WRNACK02") == 0))
      return true;
  }
  return false;
}

format1_report upgrade_format1_folder(const std::string& folder, const std::string& label) {
  format1_report report;
  auto aside = folder + ".format1", fresh = folder + ".upgrade";
  std::error_code ec;
  if (!fs::exists(folder, ec) && fs::exists(aside, ec)) rename_or_throw(aside, folder);
  fs::remove_all(fresh, ec);
  if (!fs::is_directory(folder, ec) || holds_format2(folder)) return report;
  std::map<uint64_t, v1_message> messages;
  report.damaged_bytes = read_v1_folder(folder, label, messages);
  report.messages = messages.size();
  fs::create_directories(fresh);  // also when nothing is carried over
  write_v2(fresh, label, messages);
  rename_or_throw(folder, aside);
  rename_or_throw(fresh, folder);
  sync_directory(fs::path(folder).parent_path().string());
  if (report.damaged_bytes > 0) {
    rename_or_throw(aside, folder + ".format1-damaged");
    sync_directory(fs::path(folder).parent_path().string());
  }
  return report;
}

void upgrade_data_dir(const data_dir& dir, lmdb_store& metadata,
                      const std::vector<stored_queue>& queues) {
  if (metadata.found_version() < 2) {  // format 2's folders are format 3's
    log(log_level::info, "storage",
        "upgrading data dir " + dir.path() + " from format " +
            std::to_string(metadata.found_version()) + " to " +
            std::to_string(lmdb_store::format_version));
    for (const auto& q : queues) {
      auto label = queue_label(q);
      auto report = upgrade_format1_folder(dir.queue_path(q.id), label);
      log(log_level::info, "storage",
          "queue " + label + ": " + std::to_string(report.messages) + " message(s) carried over" +
              (report.damaged_bytes ? ", " + std::to_string(report.damaged_bytes) +
                                          " unreadable byte(s) skipped; the old files are kept "
                                          "in " +
                                          dir.queue_path(q.id) + ".format1-damaged"
                                    : ""));
    }
    metadata.write_format_version();
  }
  // The old copies of an upgrade the metadata now records.
  for (const auto& q : queues) settle_originals(dir.queue_path(q.id), queue_label(q));
}

}  // namespace warren::persistence
