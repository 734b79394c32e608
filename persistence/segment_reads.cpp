// segment_store's reads of paged-out messages: reading live records back in order, and removing
// everything from a sequence number on. See segment_store.hpp.
#include "persistence/segment_store.hpp"

#include "core/log.hpp"
#include "persistence/segment_format.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace warren::persistence {

namespace {

// Records closer together than this are read with one pread, gaps (acked records) included.
constexpr uint64_t max_gap = 64 << 10;

uint64_t frame_end(uint32_t offset, uint32_t length) {
  return uint64_t{offset} + format::frame_header_size + length;
}

}  // namespace

read_result segment_store::read_live(uint64_t from, size_t max_count, uint64_t max_bytes) {
  read_result out;
  out.next_seq = from;
  if (!buffer_.empty()) write_buffer();  // records read back must be in the file
  auto s = segments_.upper_bound(from);
  if (s != segments_.begin()) --s;
  uint64_t bytes = 0;
  for (; s != segments_.end() && out.messages.size() < max_count && bytes < max_bytes; ++s) {
    auto& seg = s->second;
    auto i = std::lower_bound(seg.slots.begin(), seg.slots.end(), from,
                              [](const slot& a, uint64_t b) { return a.seq < b; });
    std::vector<slot*> run;
    for (;
         i != seg.slots.end() && out.messages.size() + run.size() < max_count && bytes < max_bytes;
         ++i) {
      out.next_seq = i->seq + 1;
      if (!i->live) continue;
      if (!run.empty() && i->offset > frame_end(run.back()->offset, run.back()->length) + max_gap) {
        read_run(seg, run, out);
        run.clear();
      }
      run.push_back(&*i);
      bytes += i->length;
    }
    if (!run.empty()) read_run(seg, run, out);
    // Stopped by the count or the bytes inside this segment: the next read goes on from here
    // (a record lost in the run must not let the read skip the rest of the segment).
    if (i != seg.slots.end()) break;
  }
  return out;
}

// One pread for records that lie close together in one segment, each checked and decoded.
void segment_store::read_run(segment& seg, const std::vector<slot*>& run, read_result& out) {
  auto path = seg_path(seg.first_seq);
  uint64_t start = run.front()->offset;
  uint64_t end = frame_end(run.back()->offset, run.back()->length);
  std::string data(end - start, '\0');
  std::string error;
  try {
    auto h = files_->open(path);
    auto got = ::pread(h.fd(), data.data(), data.size(), static_cast<off_t>(start));
    if (got < 0)
      error = std::string("read failed: ") + std::strerror(errno);
    else
      data.resize(static_cast<size_t>(got));
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (auto* s : run) {
    if (!error.empty()) {
      drop_unreadable(seg, *s, error, out);
      continue;
    }
    auto payload = format::frame_payload(data, s->offset - start, s->length);
    if (payload.empty() || format::payload_seq(payload) != s->seq) {
      drop_unreadable(seg, *s, "the record no longer checks out", out);
      continue;
    }
    recovered_message r;
    try {
      r.msg = format::decode_message(payload, r.seq, &r.enqueued_at_ms);
    } catch (const std::exception& e) {
      drop_unreadable(seg, *s, std::string("undecodable record (") + e.what() + ")", out);
      continue;
    }
    r.delivered = s->delivered;
    out.messages.push_back(std::move(r));
  }
}

// A record that cannot be read back is lost: said loudly, forgotten by the store (no mark is
// written, so a restart finds it again if the damage was passing), and its file is kept as it
// is from now on.
void segment_store::drop_unreadable(segment& seg, slot& s, const std::string& why,
                                    read_result& out) {
  log(log_level::error, "storage",
      "queue " + label_ + ": " + seg_path(seg.first_seq) +
          ": cannot read back the message at offset " + std::to_string(s.offset) + " (sequence " +
          std::to_string(s.seq) + "): " + why + "; it is dropped, the file is kept as it is");
  uint64_t body = 0;
  if (s.length > format::min_message_payload) body = s.length - format::min_message_payload;
  out.lost_body_bytes += body;
  ++out.lost;
  s.live = 0;
  if (seg.valid > 0) --seg.valid;
  seg.damaged = true;
}

uint64_t segment_store::remove_from(uint64_t from) {
  uint64_t removed = 0;
  std::vector<uint64_t> emptied;
  for (auto& [first, seg] : segments_) {
    if (seg.slots.empty() || seg.slots.back().seq < from) continue;
    std::vector<uint64_t> gone;
    bool live_before = false;
    for (auto& slot : seg.slots) {
      if (!slot.live) continue;
      if (slot.seq < from) {
        live_before = true;
        continue;
      }
      slot.live = 0;
      gone.push_back(slot.seq);
    }
    removed += gone.size();
    // Nothing live is left in such a segment: deleting its files says so without a mark per
    // record.
    if (!live_before && first != active_ && !seg.damaged) {
      emptied.push_back(first);
      continue;
    }
    for (auto seq : gone) pending_marks_.push_back({seq, first, true});
  }
  for (auto first : emptied) drop_segment(first);
  return removed;
}

}  // namespace warren::persistence
