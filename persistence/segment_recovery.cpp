// segment_store's recovery: listing the folder, scanning each segment and its mark file, and
// reporting (never repairing by overwriting) what is damaged. See segment_store.hpp.
#include "persistence/segment_store.hpp"

#include "core/log.hpp"
#include "persistence/file_io.hpp"
#include "persistence/segment_format.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <unordered_set>

namespace warren::persistence {

namespace fs = std::filesystem;
using format::file_kind;

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  auto n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string read_or_throw(const std::string& path) {
  std::string data;
  if (int err = read_whole(path, data); err != 0)
    throw storage_unavailable("cannot read " + path + ": " + std::strerror(err));
  return data;
}

}  // namespace

struct segment_store::listing {
  std::map<uint64_t, bool> segments;  // first seq -> has a mark file
  std::set<uint64_t> marks;           // mark files
  std::set<uint64_t> indexes;         // index files
};

segment_store::listing segment_store::list_folder(recovery_report& report) {
  listing out;
  std::error_code ec;
  fs::directory_iterator it(dir_, ec), end;
  if (ec) throw storage_unavailable("cannot list " + dir_ + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw storage_unavailable("cannot list " + dir_ + ": " + ec.message());
    auto name = it->path().filename().string();
    auto path = it->path().string();
    uint64_t first = 0;
    bool ours_tmp = (ends_with(name, ".seg.tmp") || ends_with(name, ".ack.tmp") ||
                     ends_with(name, ".idx.tmp")) &&
                    format::parse_file_stem(name.substr(0, name.size() - 8), first);
    if (ours_tmp && it->is_regular_file(ec)) {
      log(log_level::info, "storage",
          "queue " + label_ + ": removing " + path + ", left by an interrupted compaction");
      ::unlink(path.c_str());
      continue;
    }
    bool seg = ends_with(name, ".seg"), ack = ends_with(name, ".ack"),
         idx = ends_with(name, ".idx");
    if ((seg || ack || idx) && format::parse_file_stem(name.substr(0, name.size() - 4), first)) {
      max_seq_ = std::max(max_seq_, first);  // no new file may ever take this name
      if (it->symlink_status(ec).type() != fs::file_type::regular) {
        ++report.ignored_files;
        log(log_level::warn, "storage",
            "queue " + label_ + ": " + path + " is not a regular file; ignored, left as it is");
        continue;
      }
      if (seg) out.segments[first] = false;
      if (ack) out.marks.insert(first);
      if (idx) out.indexes.insert(first);
      continue;
    }
    ++report.ignored_files;
    log(log_level::warn, "storage",
        "queue " + label_ + ": unknown file " + path + " ignored, left as it is");
  }
  for (auto first : out.marks) {
    if (auto s = out.segments.find(first); s != out.segments.end()) {
      s->second = true;
      continue;
    }
    // A mark file whose segment was deleted (a crash between the two unlinks): marks only.
    log(log_level::info, "storage",
        "queue " + label_ + ": removing " + ack_path(first) + ", whose segment is gone");
    ::unlink(ack_path(first).c_str());
  }
  for (auto first : out.indexes)
    if (out.segments.count(first) == 0) ::unlink(idx_path(first).c_str());  // derived data
  return out;
}

void segment_store::report_damage(const std::string& file, uint64_t offset, uint64_t bytes,
                                  const char* what) {
  log(log_level::error, "storage",
      "queue " + label_ + ": " + file + ": " + what + " at offset " + std::to_string(offset) +
          ", " + std::to_string(bytes) + " byte(s) skipped (the file is kept as it is)");
}

// How much recovery may decode into memory before it leaves the rest on disk.
struct segment_store::recovery_budget {
  uint64_t limit;
  uint64_t per_message;
  uint64_t used = 0;
  bool paging = false;  // the limit was reached: every later live message stays on disk
};

std::vector<recovered_message> segment_store::recover(recovery_report& report) {
  return recover(report, UINT64_MAX, 0).in_memory;
}

recovered_queue segment_store::recover(recovery_report& report, uint64_t memory_limit,
                                       uint64_t per_message_bytes) {
  recovered_queue out;
  std::error_code ec;
  auto status = fs::symlink_status(dir_, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw storage_unavailable("cannot reach " + dir_ + ": " + ec.message());
  if (status.type() == fs::file_type::not_found) return out;
  if (status.type() != fs::file_type::directory)
    throw storage_unavailable(dir_ + " is not a directory");
  dir_ready_ = true;
  auto found = list_folder(report);
  // With no memory at all (a stream), every segment but the newest is indexed from its index.
  recovery_budget budget{memory_limit, per_message_bytes, 0, memory_limit == 0};
  for (auto s = found.segments.begin(); s != found.segments.end(); ++s) {
    auto next = std::next(s);
    uint64_t limit = next == found.segments.end() ? UINT64_MAX : next->first;
    recover_segment(s->first, limit, next == found.segments.end(), s->second,
                    found.indexes.count(s->first) != 0, out, budget, report);
  }
  // Messages of segments whose marks were damaged came back redelivered: that is written down
  // now, so a restart after the damaged marks were cut away (a torn tail) still says so.
  write_marks();
  return out;
}

// What one segment's mark file says: acked and delivered sequence numbers, and whether any of
// it was lost (then every message of the segment may have been delivered).
struct segment_store::segment_marks {
  std::unordered_set<uint64_t> acked, delivered;
  bool unsure = false;
};

// The segment's index file, when it checks out and names `size` (the segment's size now).
bool segment_store::read_index(uint64_t first, uint64_t size,
                               std::vector<format::index_entry>& entries) {
  std::string data;
  if (read_whole(idx_path(first), data) != 0) return false;
  uint64_t indexed_size = 0;
  auto problem = format::decode_index(data, first, indexed_size, entries);
  if (problem.empty() && indexed_size == size) return true;
  log(log_level::info, "storage",
      "queue " + label_ + ": " + idx_path(first) + " is not used (" +
          (problem.empty() ? "it names another size of the segment" : problem) +
          "); the segment is read instead");
  entries.clear();
  return false;
}

void segment_store::recover_segment(uint64_t first, uint64_t limit, bool last, bool has_marks,
                                    bool has_index, recovered_queue& out, recovery_budget& budget,
                                    recovery_report& report) {
  auto path = seg_path(first);
  std::vector<format::index_entry> entries;
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  // Messages that stay on disk are indexed from the index file, without reading them.
  bool index_tried = budget.paging && !last && has_index && !ec;
  if (index_tried && read_index(first, size, entries)) {
    ++report.segments;
    segment seg;
    seg.first_seq = first;
    seg.size = size;
    auto marks = read_marks(first, limit, has_marks, seg, report);
    take_indexed(entries, limit, marks, seg, out, report);
    keep_recovered(std::move(seg), report);
    return;
  }
  auto data = read_or_throw(path);
  ++report.segments;
  if (data.size() < format::file_header_size) {
    // Shorter than its header: created by a start that died at once; it holds no message.
    log(log_level::info, "storage", "queue " + label_ + ": removing empty segment " + path);
    ::unlink(path.c_str());
    ::unlink(ack_path(first).c_str());
    return;
  }
  segment seg;
  seg.first_seq = first;
  auto scan = scan_records(first, limit, last, data, seg, report);
  auto marks = read_marks(first, limit, has_marks, seg, report);
  take_records(first, data, scan, marks, seg, out, budget, report, entries);
  // Every start appends to a new segment, so this one is closed now: it gets an index.
  std::vector<format::index_entry> indexed;
  bool index_good = has_index && !index_tried && read_index(first, seg.size, indexed);
  if (!seg.damaged && !index_good) write_index(first, seg.size, entries);
  keep_recovered(std::move(seg), report);
}

void segment_store::keep_recovered(segment&& recovered, recovery_report& report) {
  auto first = recovered.first_seq;
  recovered.slots.shrink_to_fit();
  auto& kept = segments_[first] = std::move(recovered);
  if (kept.valid == 0 && !kept.damaged) {
    drop_segment(first);
    ++report.removed_segments;
  } else if (compactable(kept)) {
    kept.valid_listed = kept.valid;
    candidates_.push_back(first);
  }
}

// The segment's intact records; damage is reported, and a record torn at the end of the newest
// segment (a crash while writing it) is cut away, since nothing after it can be lost.
format::scan_result segment_store::scan_records(uint64_t first, uint64_t limit, bool last,
                                                std::string& data, segment& seg,
                                                recovery_report& report) {
  auto path = seg_path(first);
  if (auto problem = format::check_file_header(data, file_kind::segment, first); !problem.empty()) {
    report_damage(path, 0, format::file_header_size, problem.c_str());
    ++report.damaged_spans;
    report.damaged_bytes += format::file_header_size;
    seg.damaged = true;
  }
  auto scan = format::scan_frames(data, format::file_header_size, [&](std::string_view p) {
    auto seq = format::payload_seq(p);
    return p.size() >= format::min_message_payload && seq >= first && seq < limit;
  });
  for (size_t n = 0; n < scan.damaged.size(); ++n) {
    const auto& d = scan.damaged[n];
    if (last && scan.torn_tail && n + 1 == scan.damaged.size() && truncate_file(path, d.offset)) {
      log(log_level::warn, "storage",
          "queue " + label_ + ": " + path + ": torn record at offset " + std::to_string(d.offset) +
              ", " + std::to_string(d.bytes) + " byte(s) truncated");
      report.truncated_bytes += d.bytes;
      data.resize(d.offset);
      continue;
    }
    report_damage(path, d.offset, d.bytes, "damaged records");
    ++report.damaged_spans;
    report.damaged_bytes += d.bytes;
    seg.damaged = true;
  }
  seg.size = data.size();
  return scan;
}

// The segment's marks; a missing or damaged mark file makes them unsure (every message comes
// back marked redelivered), and a mark torn at its end is cut away.
segment_store::segment_marks segment_store::read_marks(uint64_t first, uint64_t limit,
                                                       bool has_marks, segment& seg,
                                                       recovery_report& report) {
  segment_marks marks;
  auto ack = ack_path(first);
  if (!has_marks) {
    marks.unsure = true;
    ++report.unsure_marks;
    log(log_level::warn, "storage",
        "queue " + label_ + ": " + ack +
            " is missing: every message of the segment comes back, marked redelivered");
    return marks;
  }
  auto mdata = read_or_throw(ack);
  if (auto problem = format::check_file_header(mdata, file_kind::marks, first); !problem.empty()) {
    report_damage(ack, 0, std::min(mdata.size(), format::file_header_size), problem.c_str());
    marks.unsure = true;
  }
  auto mscan = format::scan_frames(mdata, format::file_header_size, [](std::string_view p) {
    return format::decode_marks(p, [](format::mark, uint64_t) {});
  });
  for (const auto& f : mscan.frames)
    format::decode_marks(
        std::string_view(mdata).substr(f.offset + format::frame_header_size, f.length),
        [&](format::mark kind, uint64_t seq) {
          if (seq < first || seq >= limit) return;
          max_seq_ = std::max(max_seq_, seq);
          (kind == format::mark::acked ? marks.acked : marks.delivered).insert(seq);
        });
  for (size_t n = 0; n < mscan.damaged.size(); ++n) {
    const auto& d = mscan.damaged[n];
    marks.unsure = true;
    if (mscan.torn_tail && n + 1 == mscan.damaged.size() && truncate_file(ack, d.offset)) {
      log(log_level::warn, "storage",
          "queue " + label_ + ": " + ack + ": torn mark at offset " + std::to_string(d.offset) +
              ", " + std::to_string(d.bytes) + " byte(s) truncated");
      mdata.resize(d.offset);
      continue;
    }
    report_damage(ack, d.offset, d.bytes, "damaged marks");
  }
  seg.marks_size = mdata.size();
  if (mdata.size() < format::file_header_size) {
    // Shorter than its header, so it holds no mark: the first new mark starts it anew.
    ::unlink(ack.c_str());
    seg.marks_size = 0;
  }
  if (marks.unsure) {
    ++report.unsure_marks;
    log(log_level::warn, "storage",
        "queue " + label_ + ": marks of " + seg_path(first) +
            " are damaged: its messages come back marked redelivered, and acked ones may "
            "come back");
  }
  return marks;
}

// A live record found at recovery: indexed, and marked delivered on disk when its segment's
// marks were lost (every message of it may have reached a consumer).
void segment_store::add_recovered_slot(segment& seg, const format::index_entry& e,
                                       const segment_marks& marks) {
  bool marked = marks.delivered.count(e.seq) != 0;
  slot entry{};
  entry.seq = e.seq;
  entry.offset = e.offset;
  entry.length = e.length;
  entry.live = 1;
  entry.delivered = (marks.unsure || marked) ? 1 : 0;
  seg.slots.push_back(entry);
  ++slot_count_;
  ++seg.valid;
  if (marks.unsure && !marked) pending_marks_.push_back({e.seq, seg.first_seq, false});
}

// The messages of the segment that are not acked, indexed; the first ones (within the budget)
// decoded into `out`, the rest counted as left on disk. Records of transient messages (paged
// out before the restart) are dropped; undecodable records are reported. `entries` gets the
// segment's index.
void segment_store::take_records(uint64_t first, const std::string& data,
                                 const format::scan_result& scan, const segment_marks& marks,
                                 segment& seg, recovered_queue& out, recovery_budget& budget,
                                 recovery_report& report,
                                 std::vector<format::index_entry>& entries) {
  auto path = seg_path(first);
  for (const auto& f : scan.frames) {
    auto payload = std::string_view(data).substr(f.offset + format::frame_header_size, f.length);
    ++report.records;
    ++seg.records;
    auto seq = format::payload_seq(payload);
    max_seq_ = std::max(max_seq_, seq);
    if (!entries.empty() && entries.back().seq >= seq) continue;  // out of order: a duplicate
    format::payload_summary summary;
    if (!format::summarize_payload(payload, summary)) {
      ++report.undecodable;
      report_damage(path, f.offset, format::frame_header_size + f.length,
                    "undecodable record (its lengths run past its end)");
      seg.damaged = true;
      continue;
    }
    format::index_entry entry{seq, static_cast<uint32_t>(f.offset), f.length,
                              static_cast<uint32_t>(summary.body_bytes), summary.persistent};
    entries.push_back(entry);
    if (marks.acked.count(seq) != 0) continue;
    if (!summary.persistent && !opts_.keep_transient) {
      ++report.transient;
      continue;
    }
    uint64_t cost = summary.body_bytes + budget.per_message;
    budget.paging = budget.paging || budget.used + cost > budget.limit;
    if (budget.paging) {
      if (out.paged_count++ == 0) out.paged_from = seq;
      out.paged_body_bytes += summary.body_bytes;
    } else {
      recovered_message r;
      try {
        r.msg = format::decode_message(payload, r.seq, &r.enqueued_at_ms);
      } catch (const std::exception& e) {
        ++report.undecodable;
        report_damage(path, f.offset, format::frame_header_size + f.length,
                      ("undecodable record (" + std::string(e.what()) + ")").c_str());
        seg.damaged = true;
        continue;
      }
      r.delivered = marks.unsure || marks.delivered.count(seq) != 0;
      budget.used += cost;
      out.in_memory.push_back(std::move(r));
    }
    add_recovered_slot(seg, entry, marks);
  }
}

// The same from the segment's index file: every live message stays on disk.
void segment_store::take_indexed(const std::vector<format::index_entry>& entries, uint64_t limit,
                                 const segment_marks& marks, segment& seg, recovered_queue& out,
                                 recovery_report& report) {
  for (const auto& e : entries) {
    if (e.seq >= limit) break;
    ++report.records;
    ++seg.records;
    max_seq_ = std::max(max_seq_, e.seq);
    if (marks.acked.count(e.seq) != 0) continue;
    if (!e.persistent && !opts_.keep_transient) {
      ++report.transient;
      continue;
    }
    if (out.paged_count++ == 0) out.paged_from = e.seq;
    out.paged_body_bytes += e.body_bytes;
    add_recovered_slot(seg, e, marks);
  }
}

}  // namespace warren::persistence
