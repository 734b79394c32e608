// The read-only check of queue folders (see folder_check.hpp). It walks a folder the way
// segment_store's recovery (segment_recovery.cpp) does, and where recovery acts, says what it
// will do instead of doing it.
#include "persistence/folder_check.hpp"

#include "persistence/file_io.hpp"
#include "persistence/segment_format.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>

namespace warren::persistence {

namespace {

namespace fs = std::filesystem;
using format::file_kind;

constexpr const char* unavailable =
    "start-up cannot read it either: the queue is unavailable (its files untouched) until it can";
constexpr const char* index_not_used =
    "start-up does not use it: it reads the segment instead (and writes a new index unless the "
    "segment is damaged); nothing is lost";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string at(uint64_t offset, uint64_t bytes) {
  return "at offset " + std::to_string(offset) + " (" + std::to_string(bytes) + " bytes)";
}

// Sequence numbers a damaged span could have held: [from, to); `to` is UINT64_MAX when nothing
// bounds it (the end of the newest segment).
struct seq_range {
  uint64_t from;
  uint64_t to;
};

// A segment as the check reads it.
struct segment_read {
  uint64_t first = 0;
  uint64_t limit = UINT64_MAX;  // the next segment's first sequence number
  bool last = false;            // the newest: recovery cuts a torn tail off it
  std::string path;
  std::string data;
  format::scan_result scan;
  std::set<uint64_t> acked;                  // by marks that check out
  std::vector<format::index_entry> entries;  // its records, as recovery indexes them
  size_t live = 0;                           // intact persistent records not acked
};

uint64_t frame_seq(const segment_read& seg, const format::frame_span& f) {
  return format::payload_seq(
      std::string_view(seg.data).substr(f.offset + format::frame_header_size, f.length));
}

seq_range seqs_within(const segment_read& seg, const format::damaged_span& d) {
  const auto& frames = seg.scan.frames;
  auto next =
      std::lower_bound(frames.begin(), frames.end(), d.offset,
                       [](const format::frame_span& f, uint64_t o) { return f.offset < o; });
  seq_range r{seg.first, seg.limit};
  if (next != frames.begin()) r.from = frame_seq(seg, *std::prev(next)) + 1;
  if (next != frames.end()) r.to = frame_seq(seg, *next);
  return r;
}

// What a damaged span costs: "" when every number it could hold is acked, else the loss.
std::string loss_in(const segment_read& seg, const seq_range& r) {
  auto from = std::to_string(r.from);
  if (r.to == UINT64_MAX) return "the messages in them are lost (sequence " + from + " on)";
  if (r.to <= r.from) return {};
  auto acked = static_cast<uint64_t>(
      std::distance(seg.acked.lower_bound(r.from), seg.acked.lower_bound(r.to)));
  auto open = r.to - r.from - acked;
  if (open == 0) return {};
  return "the messages in them are lost: up to " + std::to_string(open) + " not acked (sequence " +
         from + " to " + std::to_string(r.to - 1) + ")";
}

// True when the bytes from `offset` on are what a stop leaves while a record is written: too few
// for a frame header, never written (zeros), or a frame whose length runs past the end. Such a
// record was never synced, so never confirmed.
bool cut_short(std::string_view data, uint64_t offset) {
  auto rest = data.substr(offset);
  if (rest.size() < format::frame_header_size) return true;
  if (rest.find_first_not_of('\0') == std::string_view::npos) return true;
  uint64_t length = 0;  // the frame's u32 length, little-endian, after its checksum
  for (int i = 0; i < 4; ++i) length |= uint64_t{static_cast<uint8_t>(rest[4 + i])} << (8 * i);
  return format::frame_header_size + length > rest.size();
}

bool same_entry(const format::index_entry& a, const format::index_entry& b) {
  return a.seq == b.seq && a.offset == b.offset && a.length == b.length &&
         a.body_bytes == b.body_bytes && a.persistent == b.persistent;
}

bool in_damage(const format::scan_result& scan, uint64_t offset) {
  return std::any_of(scan.damaged.begin(), scan.damaged.end(), [&](const auto& d) {
    return offset >= d.offset && offset < d.offset + d.bytes;
  });
}

// Where an index that checks out disagrees with the segment's records; "" when it agrees.
// Entries in damaged bytes are passed over: that damage is the segment's, reported with it.
std::string disagreement(const segment_read& seg, const std::vector<format::index_entry>& listed) {
  std::map<uint64_t, const format::index_entry*> found;
  for (const auto& e : seg.entries) found[e.offset] = &e;
  std::set<uint64_t> offsets;
  for (const auto& e : listed) {
    if (in_damage(seg.scan, e.offset)) continue;
    auto f = found.find(e.offset);
    if (f == found.end() || !same_entry(*f->second, e))
      return "its entry for sequence " + std::to_string(e.seq) + " (offset " +
             std::to_string(e.offset) + ") disagrees with the segment";
    offsets.insert(e.offset);
  }
  for (const auto& e : seg.entries)
    if (offsets.count(e.offset) == 0)
      return "it leaves out sequence " + std::to_string(e.seq) + " (offset " +
             std::to_string(e.offset) + ")";
  return {};
}

class folder_checker {
 public:
  folder_checker(std::string folder, folder_check_result& out)
      : folder_(std::move(folder)), out_(out) {}

  void run() {
    listing found;
    if (!list(found)) return;
    for (auto s = found.segments.begin(); s != found.segments.end(); ++s) {
      segment_read seg;
      seg.first = *s;
      auto next = std::next(s);
      seg.last = next == found.segments.end();
      if (!seg.last) seg.limit = *next;
      seg.path = file(seg.first, ".seg");
      check_segment(seg, found.marks.count(seg.first) != 0, found.indexes.count(seg.first) != 0);
    }
  }

 private:
  struct listing {
    std::set<uint64_t> segments, marks, indexes;
  };

  std::string file(uint64_t first, const char* suffix) const {
    return folder_ + "/" + format::file_stem(first) + suffix;
  }

  void note(const std::string& path, const std::string& problem, const std::string& cost) {
    out_.findings.push_back({path, problem, cost, false, {}, {}});
  }

  folder_finding& damage(const std::string& path, const std::string& problem,
                         const std::string& cost) {
    out_.findings.push_back({path, problem, cost, true, {}, {}});
    return out_.findings.back();
  }

  // A damaged segment goes aside on --repair, except the newest: the queue numbers its next
  // messages from the end of that one, so without it a restart would give out sequence numbers
  // again (stream offsets that consumers committed would then name other messages).
  void offer_move(const segment_read& seg, folder_finding& f) {
    if (!seg.last) {
      f.move_aside = {seg.path};
      return;
    }
    f.cost +=
        "; --repair leaves the newest segment in place, as the queue numbers its next "
        "messages from it";
  }

  // A segment or mark file read whole; one that cannot be read makes the queue unavailable.
  bool read(const std::string& path, std::string& data) {
    if (int err = read_whole(path, data); err != 0) {
      damage(path, std::string("cannot be read: ") + std::strerror(err), unavailable);
      return false;
    }
    ++out_.files;
    return true;
  }

  bool list(listing& found) {
    std::error_code ec;
    fs::directory_iterator it(folder_, ec), end;
    for (; !ec && it != end; it.increment(ec)) sort_entry(*it, found);
    if (ec) {
      damage(folder_, "cannot be listed: " + ec.message(), unavailable);
      return false;
    }
    for (auto first : found.marks)
      if (found.segments.count(first) == 0)
        note(file(first, ".ack"), "marks of a segment that is gone",
             "start-up removes it; nothing is lost");
    for (auto first : found.indexes)
      if (found.segments.count(first) == 0)
        note(file(first, ".idx"), "index of a segment that is gone",
             "start-up removes it; nothing is lost");
    return true;
  }

  void sort_entry(const fs::directory_entry& entry, listing& found) {
    auto name = entry.path().filename().string();
    auto path = entry.path().string();
    uint64_t first = 0;
    std::error_code ec;
    for (const char* tmp : {".seg.tmp", ".ack.tmp", ".idx.tmp"})
      if (ends_with(name, tmp) && format::parse_file_stem(name.substr(0, name.size() - 8), first) &&
          entry.is_regular_file(ec))
        return note(path, "left by an interrupted compaction or index write",
                    "start-up removes it; the file it was to replace is intact, nothing is lost");
    auto suffix = name.size() > 4 ? name.substr(name.size() - 4) : std::string();
    bool ours = (suffix == ".seg" || suffix == ".ack" || suffix == ".idx") &&
                format::parse_file_stem(name.substr(0, name.size() - 4), first);
    if (!ours) return note(path, "unknown file", "start-up ignores it and leaves it as it is");
    if (entry.symlink_status(ec).type() != fs::file_type::regular)
      return note(path, "not a regular file", "start-up ignores it and leaves it as it is");
    (suffix == ".seg"   ? found.segments
     : suffix == ".ack" ? found.marks
                        : found.indexes)
        .insert(first);
  }

  void check_segment(segment_read& seg, bool has_marks, bool has_index) {
    if (!read(seg.path, seg.data)) return;
    if (seg.data.size() < format::file_header_size)
      return note(seg.path,
                  "shorter than its header (" + std::to_string(seg.data.size()) +
                      " bytes): an empty segment left by a start that stopped at once",
                  "start-up removes it and its mark file; it holds no message");
    auto findings_before = out_.findings.size();
    check_marks(seg, has_marks);
    if (auto problem = format::check_file_header(seg.data, file_kind::segment, seg.first);
        !problem.empty())
      note(seg.path, problem,
           "it holds no message: start-up reports it and reads the records after it");
    seg.scan = format::scan_frames(seg.data, format::file_header_size, [&](std::string_view p) {
      // recovery's test: a record of this segment's sequence numbers
      auto seq = format::payload_seq(p);
      return p.size() >= format::min_message_payload && seq >= seg.first && seq < seg.limit;
    });
    check_records(seg);
    check_spans(seg);
    if (has_index) check_index(seg);
    settle_moves(seg, has_marks, has_index, findings_before);
  }

  // The acked sequence numbers of the segment's marks, and what is wrong with them: never a
  // lost message, at worst messages coming back.
  void check_marks(segment_read& seg, bool has_marks) {
    auto path = file(seg.first, ".ack");
    std::string data;
    if (!has_marks)
      return note(path, "missing",
                  "every message of the segment comes back marked redelivered, acked ones too "
                  "(at-least-once); nothing is lost");
    if (!read(path, data)) return;
    if (auto problem = format::check_file_header(data, file_kind::marks, seg.first);
        !problem.empty())
      note(path, problem,
           "every message of the segment comes back marked redelivered; nothing is lost");
    auto scan = format::scan_frames(data, format::file_header_size, [](std::string_view p) {
      return format::decode_marks(p, [](format::mark, uint64_t) {});
    });
    for (const auto& f : scan.frames)
      format::decode_marks(
          std::string_view(data).substr(f.offset + format::frame_header_size, f.length),
          [&](format::mark kind, uint64_t seq) {
            if (kind == format::mark::acked && seq >= seg.first && seq < seg.limit)
              seg.acked.insert(seq);
          });
    for (size_t n = 0; n < scan.damaged.size(); ++n) {
      const auto& d = scan.damaged[n];
      if (scan.torn_tail && n + 1 == scan.damaged.size())
        note(path, "torn mark " + at(d.offset, d.bytes),
             "start-up cuts it off: the acks in it may come back as redeliveries; nothing is lost");
      else
        note(path, "damaged marks " + at(d.offset, d.bytes),
             "the acks in these bytes are forgotten: those messages come back, marked "
             "redelivered; nothing is lost");
    }
  }

  // Every record that checks out is summarized and, unless acked, decoded, as recovery and the
  // reads of paged-out messages do; `seg.entries` gets the segment's index.
  void check_records(segment_read& seg) {
    for (const auto& f : seg.scan.frames) {
      auto payload =
          std::string_view(seg.data).substr(f.offset + format::frame_header_size, f.length);
      auto seq = format::payload_seq(payload);
      if (!seg.entries.empty() && seg.entries.back().seq >= seq) continue;  // a duplicate
      bool acked = seg.acked.count(seq) != 0;
      format::payload_summary summary;
      if (!format::summarize_payload(payload, summary)) {
        undecodable(seg, f, seq, acked, "its lengths run past its end");
        continue;
      }
      seg.entries.push_back({seq, static_cast<uint32_t>(f.offset), f.length,
                             static_cast<uint32_t>(summary.body_bytes), summary.persistent});
      if (acked) continue;
      try {
        uint64_t decoded_seq = 0;
        format::decode_message(payload, decoded_seq);
      } catch (const std::exception& e) {
        undecodable(seg, f, seq, false, e.what());
        continue;
      }
      if (summary.persistent) ++seg.live;
    }
  }

  void undecodable(const segment_read& seg, const format::frame_span& f, uint64_t seq, bool acked,
                   const std::string& why) {
    auto problem = "undecodable record " + at(f.offset, format::frame_header_size + f.length) +
                   ", sequence " + std::to_string(seq) + ": " + why;
    if (acked) return note(seg.path, problem, "it was acked: nothing is lost");
    offer_move(seg,
               damage(seg.path, problem, "the message is lost: start-up reports it and skips it"));
  }

  void check_spans(const segment_read& seg) {
    const auto& spans = seg.scan.damaged;
    for (size_t n = 0; n < spans.size(); ++n) {
      const auto& d = spans[n];
      if (seg.last && seg.scan.torn_tail && n + 1 == spans.size()) {
        check_torn_tail(seg, d);
        continue;
      }
      auto problem = "damaged records " + at(d.offset, d.bytes);
      auto loss = loss_in(seg, seqs_within(seg, d));
      if (loss.empty()) {
        note(seg.path, problem,
             "every message they could hold was acked: nothing is lost; start-up skips them "
             "and keeps the file as it is");
        continue;
      }
      offer_move(seg, damage(seg.path, problem,
                             loss + "; start-up skips them, reads the file's other records and "
                                    "keeps the file as it is"));
    }
  }

  // The end of the newest segment: recovery cuts off what does not check out there, which is
  // lossless for a record cut short by a stop, and not for a whole record damaged later.
  void check_torn_tail(const segment_read& seg, const format::damaged_span& d) {
    if (cut_short(seg.data, d.offset))
      return note(seg.path, "torn tail " + at(d.offset, d.bytes),
                  "a record cut short by a stop while it was written, so never confirmed: "
                  "start-up cuts these bytes off; nothing confirmed is lost");
    auto loss = loss_in(seg, seqs_within(seg, d));
    damage(seg.path,
           "the last record fails its checksum though it is whole, " + at(d.offset, d.bytes),
           "start-up cuts these bytes off as a torn write: " + loss +
               " unless the node stopped while writing them (then they were never confirmed). "
               "--repair leaves the file, as moving it would cost its other messages too");
  }

  // An index is derived data: one that does not check out costs nothing, but one that checks
  // out and misplaces records is trusted for paged-out messages.
  void check_index(const segment_read& seg) {
    auto path = file(seg.first, ".idx");
    std::string data;
    if (int err = read_whole(path, data); err != 0)
      return note(path, std::string("cannot be read: ") + std::strerror(err), index_not_used);
    ++out_.files;
    uint64_t size = 0;
    std::vector<format::index_entry> listed;
    if (auto problem = format::decode_index(data, seg.first, size, listed); !problem.empty())
      return note(path, problem, index_not_used);
    if (size != seg.data.size())
      return note(path,
                  "names a segment of " + std::to_string(size) + " bytes; it has " +
                      std::to_string(seg.data.size()),
                  index_not_used);
    auto off = disagreement(seg, listed);
    if (off.empty()) return;
    auto& f = damage(path, off,
                     "start-up trusts it for a segment whose messages stay on disk (a queue "
                     "over its memory budget): the messages it misplaces are never served, or "
                     "dropped as unreadable");
    f.move_aside = {path};
    f.if_moved = "nothing: start-up reads the segment instead and writes a new index";
  }

  // A finding that moving its segment aside settles takes the segment's mark and index files
  // along: start-up would remove them as belonging to no segment.
  void settle_moves(const segment_read& seg, bool has_marks, bool has_index, size_t from) {
    std::vector<std::string> group{seg.path};
    if (has_marks) group.push_back(file(seg.first, ".ack"));
    if (has_index) group.push_back(file(seg.first, ".idx"));
    auto kept = seg.live == 0 ? std::string("nothing more: no other message of it is unacked")
                              : "its " + std::to_string(seg.live) +
                                    " intact unacked message(s) leave the queue with it (they "
                                    "stay in the moved file)";
    for (size_t i = from; i < out_.findings.size(); ++i) {
      auto& f = out_.findings[i];
      if (f.move_aside.size() != 1 || f.move_aside.front() != seg.path) continue;
      f.move_aside = group;
      f.if_moved = kept;
    }
  }

  std::string folder_;
  folder_check_result& out_;
};

bool parse_id(const std::string& name, uint64_t& id) {
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  return ec == std::errc() && end == name.data() + name.size();
}

}  // namespace

void check_queue_folder(const std::string& folder, folder_check_result& out) {
  folder_checker(folder, out).run();
}

folder_check_result check_queue_folders(const std::string& queues_dir,
                                        const std::set<uint64_t>* live) {
  folder_check_result out;
  std::error_code ec;
  if (fs::symlink_status(queues_dir, ec).type() == fs::file_type::not_found) return out;
  std::vector<fs::path> entries;
  fs::directory_iterator it(queues_dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
  if (ec) {
    out.findings.push_back({queues_dir,
                            "cannot be listed: " + ec.message(),
                            "the node cannot start until it can",
                            true,
                            {},
                            {}});
    return out;
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& path : entries) {
    uint64_t id = 0;
    bool owned = parse_id(path.filename().string(), id) && (live == nullptr || live->count(id));
    if (live != nullptr && !owned) {
      out.findings.push_back({path.string(),
                              "belongs to no queue record",
                              "start-up leaves it as it is (and so does this check)",
                              false,
                              {},
                              {}});
      continue;
    }
    if (fs::symlink_status(path, ec).type() != fs::file_type::directory) {
      out.findings.push_back({path.string(),
                              "is not a folder",
                              "the queue of this id, if any, is unavailable until it is one",
                              true,
                              {},
                              {}});
      continue;
    }
    ++out.folders;
    check_queue_folder(path.string(), out);
  }
  return out;
}

}  // namespace warren::persistence
