// segment_store's compaction: a closed segment that is mostly acked is rewritten with only its
// live records, in four steps (choose, rewrite, replace the files, adopt the new layout), so that
// a crash at any point leaves either the old or the new segment whole. See segment_store.hpp.
#include "persistence/segment_store.hpp"

#include "core/log.hpp"
#include "persistence/data_dir.hpp"
#include "persistence/file_io.hpp"
#include "persistence/segment_format.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace warren::persistence {

using format::file_kind;

// The new contents of one segment: its file, its mark file, and where its records went.
struct segment_store::compacted {
  std::string segment;
  std::string marks;
  std::vector<slot> moved;
  std::vector<format::index_entry> entries;
};

// The next candidate worth compacting now (0: none), looking at no more than `looks` of them
// in all (one call of compact_one looks at each at most once). One still losing records is looked
// at again later: consumers are draining it, and it is likely gone before long (a queue consumed
// in order would otherwise copy every segment on its way out).
uint64_t segment_store::next_compaction(size_t& looks) {
  for (; looks > 0 && !candidates_.empty(); --looks) {
    auto first = candidates_.back();
    candidates_.pop_back();
    auto s = segments_.find(first);
    if (s == segments_.end() || first == active_ || !compactable(s->second)) continue;
    auto& seg = s->second;
    if (seg.valid < seg.valid_listed) {
      seg.valid_listed = seg.valid;
      candidates_.insert(candidates_.begin(), first);
      continue;
    }
    --looks;
    return first;
  }
  return 0;
}

// Copies the live records of `seg` into `out`, with their delivered marks; false when the file
// cannot be read or no longer checks out (then it is left as it is).
bool segment_store::rewrite_live(uint64_t first, segment& seg, compacted& out) {
  std::string data;
  if (int err = read_whole(seg_path(first), data); err != 0) {
    log(log_level::error, "storage",
        "queue " + label_ + ": cannot read " + seg_path(first) +
            " to compact it: " + std::strerror(err));
    return false;
  }
  auto scan = format::scan_frames(data, format::file_header_size, [](std::string_view p) {
    return p.size() >= format::min_message_payload;
  });
  if (!scan.damaged.empty()) {
    seg.damaged = true;  // changed under us: leave it be
    log(log_level::error, "storage",
        "queue " + label_ + ": " + seg_path(first) + " is damaged at offset " +
            std::to_string(scan.damaged.front().offset) + "; not compacted, kept as it is");
    return false;
  }
  out.segment = format::file_header(file_kind::segment, first);
  std::vector<uint64_t> delivered;
  for (const auto& f : scan.frames) {
    auto payload = std::string_view(data).substr(f.offset + format::frame_header_size, f.length);
    auto seq = format::payload_seq(payload);
    segment* in = nullptr;
    auto* s = find_slot(seq, &in);
    if (s == nullptr || in != &seg) continue;
    out.moved.push_back(*s);
    out.moved.back().offset = static_cast<uint32_t>(out.segment.size());
    format::payload_summary summary;
    format::summarize_payload(payload, summary);
    out.entries.push_back({seq, out.moved.back().offset, f.length,
                           static_cast<uint32_t>(summary.body_bytes), summary.persistent});
    if (s->delivered) delivered.push_back(seq);
    format::append_frame(out.segment, payload);
  }
  out.marks = format::file_header(file_kind::marks, first);
  if (!delivered.empty())
    format::append_frame(out.marks, format::encode_marks(format::mark::delivered, delivered));
  return true;
}

// Copy, sync, rename over, sync the folder: a crash leaves the old or the new segment whole. The
// segment goes first; the old mark file still fits the new segment (its extra marks name
// messages no longer there).
bool segment_store::replace_files(uint64_t first, const compacted& c) {
  auto seg_tmp = file_path(first, ".seg.tmp"), ack_tmp = file_path(first, ".ack.tmp");
  bool ok = write_new_file(seg_tmp, c.segment) && write_new_file(ack_tmp, c.marks);
  files_->forget(seg_path(first));
  files_->forget(ack_path(first));
  ok = ok && ::rename(seg_tmp.c_str(), seg_path(first).c_str()) == 0 &&
       ::rename(ack_tmp.c_str(), ack_path(first).c_str()) == 0;
  if (!ok) {
    log(log_level::error, "storage",
        "queue " + label_ + ": compacting " + seg_path(first) + " failed: " + std::strerror(errno));
    ::unlink(seg_tmp.c_str());
    ::unlink(ack_tmp.c_str());
    return false;
  }
  try {
    sync_directory(dir_);
  } catch (const std::exception& e) {
    // The renames may not be durable, and a later sync that passes would prove nothing: the
    // queue stops like after any failed sync (sync_failure), and a restart reads what is there.
    last_error_ = sync_failure_ = e.what();
  }
  return true;
}

// The store now points into the new files.
void segment_store::adopt_compacted(uint64_t first, segment& seg, compacted&& c) {
  log(log_level::info, "storage",
      "queue " + label_ + ": compacted segment " + format::file_stem(first) + ".seg from " +
          std::to_string(seg.records) + " to " + std::to_string(c.moved.size()) + " records (" +
          std::to_string(seg.size) + " to " + std::to_string(c.segment.size()) + " bytes)");
  slot_count_ -= seg.slots.size() - c.moved.size();
  seg.slots = std::move(c.moved);
  unindexed_.erase(first);
  write_index(first, c.segment.size(), c.entries);
  seg.records = static_cast<uint32_t>(seg.slots.size());
  seg.valid = seg.records;
  seg.size = c.segment.size();
  seg.marks_size = c.marks.size();
  unsynced_.erase(first);
}

bool segment_store::compact_one() {
  write_marks();  // mark files must be complete before one is replaced, and counts up to date
  for (size_t looks = candidates_.size();;) {
    auto first = next_compaction(looks);
    if (first == 0) return true;
    auto& seg = segments_.at(first);
    ++compactions_;
    compacted c;
    if (!rewrite_live(first, seg, c)) {
      if (seg.damaged) continue;  // the next candidate gets its turn
      return false;
    }
    if (!replace_files(first, c)) return false;
    adopt_compacted(first, seg, std::move(c));
    return true;
  }
}

}  // namespace warren::persistence
