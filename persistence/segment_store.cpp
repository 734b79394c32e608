#include "persistence/segment_store.hpp"

#include "core/log.hpp"
#include "persistence/data_dir.hpp"
#include "persistence/file_io.hpp"
#include "persistence/segment_format.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_set>

namespace warren::persistence {

namespace fs = std::filesystem;
using format::file_kind;

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

segment_store::segment_store(std::string dir, std::string label, options opts,
                             std::shared_ptr<file_cache> files)
    : dir_(std::move(dir)),
      label_(std::move(label)),
      opts_(opts),
      files_(files ? std::move(files) : std::make_shared<file_cache>(16)) {
  // A slot's offset is 32 bits: a segment (its limit plus one frame) must stay under 4 GiB.
  opts_.segment_bytes = std::min<uint64_t>(opts_.segment_bytes, uint64_t{1} << 30);
}

segment_store::~segment_store() {
  forget_files();
}

std::string segment_store::file_path(uint64_t first_seq, const char* suffix) const {
  return dir_ + "/" + format::file_stem(first_seq) + suffix;
}

void segment_store::forget_files() {
  for (const auto& [first, seg] : segments_) {
    files_->forget(seg_path(first));
    files_->forget(ack_path(first));
  }
}

void segment_store::ensure_dir() {
  if (dir_ready_) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("cannot create " + dir_ + ": " + ec.message());
  try {
    sync_directory(fs::path(dir_).parent_path().string());
  } catch (const std::exception& e) {
    // As with a file's sync (sync_written): a later sync that passes proves nothing.
    last_error_ = sync_failure_ = e.what();
    throw;
  }
  dir_ready_ = true;
}

// A new segment: its mark file first, so that a segment without one is known to have lost it.
// Both are created exclusively: a name already taken is an error, never overwritten.
void segment_store::create_segment(uint64_t first_seq) {
  ensure_dir();
  for (auto kind : {file_kind::marks, file_kind::segment}) {
    auto path = kind == file_kind::marks ? ack_path(first_seq) : seg_path(first_seq);
    auto header = format::file_header(kind, first_seq);
    auto h = files_->open(path, true);
    dir_dirty_ = true;
    if (!write_all(h.fd(), header.data(), header.size(), 0))
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
  auto& seg = segments_[first_seq];
  seg.first_seq = first_seq;
  seg.size = format::file_header_size;
  seg.marks_size = format::file_header_size;
}

segment_store::slot* segment_store::find_slot(uint64_t seq, segment** in) {
  auto s = segments_.upper_bound(seq);
  if (s == segments_.begin()) return nullptr;
  auto& slots = std::prev(s)->second.slots;
  auto i = std::lower_bound(slots.begin(), slots.end(), seq,
                            [](const slot& a, uint64_t b) { return a.seq < b; });
  if (i == slots.end() || i->seq != seq || !i->live) return nullptr;
  if (in != nullptr) *in = &std::prev(s)->second;
  return &*i;
}

const segment_store::slot* segment_store::find_slot(uint64_t seq) const {
  return const_cast<segment_store*>(this)->find_slot(seq, nullptr);
}

void segment_store::append(uint64_t seq, const message& m, int64_t enqueued_at_ms) {
  max_seq_ = std::max(max_seq_, seq);
  batch_seqs_.push_back(seq);
  try {
    auto payload = format::encode_message(seq, m, enqueued_at_ms);
    auto frame_size = format::frame_header_size + payload.size();
    if (active_ != 0) {
      auto& seg = segments_[active_];
      uint64_t end = seg.size + buffer_.size();
      if (end + frame_size > opts_.segment_bytes && end > format::file_header_size) {
        write_buffer();  // the old segment's last records; failures reported by the next sync
        close_active();
      }
    }
    if (active_ == 0) {
      create_segment(seq);
      active_ = seq;
    }
    auto& seg = segments_[active_];
    slot entry{};
    entry.seq = seq;
    entry.offset = static_cast<uint32_t>(seg.size + buffer_.size());
    entry.length = static_cast<uint32_t>(payload.size());
    entry.live = 1;
    entry.transient = m.persistent() || opts_.keep_transient ? 0 : 1;
    seg.slots.push_back(entry);
    ++slot_count_;
    active_index_.push_back(
        {seq, entry.offset, entry.length, static_cast<uint32_t>(m.body.size()), m.persistent()});
    format::append_frame(buffer_, payload);
    buffered_seqs_.push_back(seq);
    ++seg.records;
    ++seg.valid;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    log(log_level::error, "storage", "queue " + label_ + ": " + last_error_);
    failing_.push_back(seq);
  }
}

void segment_store::write_buffer() {
  if (buffer_.empty()) return;
  auto& seg = segments_[active_];
  try {
    auto h = files_->open(seg_path(active_));
    if (!write_all(h.fd(), buffer_.data(), buffer_.size(), seg.size))
      throw std::runtime_error("write to " + seg_path(active_) +
                               " failed: " + std::strerror(errno));
    seg.size += buffer_.size();
    unsynced_.insert(active_);
  } catch (const std::exception& e) {
    fail_buffer(e.what());
  }
  buffer_.clear();
  buffered_seqs_.clear();
}

// Nothing of the buffer is stored: forget it and cut off whatever part reached the file (if
// that fails too, the next write goes to the same offset and replaces the partial frame).
void segment_store::fail_buffer(const std::string& error) {
  last_error_ = error;
  log(log_level::error, "storage", "queue " + label_ + ": " + last_error_);
  auto& seg = segments_[active_];
  (void)truncate_file(seg_path(active_), seg.size);
  // The buffered records are the last slots of the active segment.
  for (auto b = buffered_seqs_.rbegin(); b != buffered_seqs_.rend(); ++b) {
    if (seg.slots.empty() || seg.slots.back().seq != *b) continue;
    bool live = seg.slots.back().live;
    seg.slots.pop_back();
    --slot_count_;
    if (!active_index_.empty() && active_index_.back().seq == *b) active_index_.pop_back();
    --seg.records;
    if (live) --seg.valid;
    failing_.push_back(*b);
  }
}

void segment_store::remove(uint64_t seq) {
  segment* seg = nullptr;
  auto* s = find_slot(seq, &seg);
  if (s == nullptr) return;
  s->live = 0;
  pending_marks_.push_back({seq, seg->first_seq, true});
}

void segment_store::mark_delivered(uint64_t seq) {
  segment* seg = nullptr;
  auto* s = find_slot(seq, &seg);
  if (s == nullptr || s->delivered) return;
  s->delivered = 1;
  pending_marks_.push_back({seq, seg->first_seq, false});
}

void segment_store::write_marks() {
  if (pending_marks_.empty()) return;
  std::map<uint64_t, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> by_segment;
  for (const auto& m : pending_marks_)
    (m.acked ? by_segment[m.segment].first : by_segment[m.segment].second).push_back(m.seq);
  pending_marks_.clear();
  for (auto& [first, lists] : by_segment) {
    auto s = segments_.find(first);
    if (s == segments_.end()) continue;
    write_marks_of(s->second, lists.first, lists.second);
    auto& seg = s->second;
    seg.valid -= std::min<uint32_t>(seg.valid, static_cast<uint32_t>(lists.first.size()));
    after_invalidate(seg);
  }
}

void segment_store::write_marks_of(segment& seg, const std::vector<uint64_t>& acked,
                                   const std::vector<uint64_t>& delivered) {
  std::string out;
  bool fresh = seg.marks_size == 0;  // recovery found no mark file: start one
  if (fresh) out = format::file_header(file_kind::marks, seg.first_seq);
  if (!acked.empty()) format::append_frame(out, format::encode_marks(format::mark::acked, acked));
  if (!delivered.empty())
    format::append_frame(out, format::encode_marks(format::mark::delivered, delivered));
  auto path = ack_path(seg.first_seq);
  try {
    auto h = files_->open(path, fresh);
    if (fresh) dir_dirty_ = true;
    if (!write_all(h.fd(), out.data(), out.size(), seg.marks_size))
      throw std::runtime_error("write to " + path + " failed: " + std::strerror(errno));
    seg.marks_size += out.size();
  } catch (const std::exception& e) {
    // Losing marks costs redeliveries after a restart, never a message.
    log(log_level::warn, "storage",
        "queue " + label_ + ": " + e.what() + " (" + std::to_string(acked.size()) +
            " acked message(s) may come back after a restart)");
  }
}

bool segment_store::compactable(const segment& seg) const {
  return !seg.damaged && seg.records > opts_.compact_min_records && seg.valid * 2 < seg.records;
}

void segment_store::after_invalidate(segment& seg) {
  if (seg.first_seq == active_ || seg.damaged) return;
  if (seg.valid == 0) {
    drop_segment(seg.first_seq);
  } else if (compactable(seg) && std::find(candidates_.begin(), candidates_.end(), seg.first_seq) ==
                                     candidates_.end()) {
    seg.valid_listed = seg.valid;
    candidates_.push_back(seg.first_seq);
  }
}

// The active segment is closed once it is mostly (or wholly) acked, so that compaction and
// deletion reach it too; the next append starts a new one.
void segment_store::roll_if_wasted() {
  if (active_ == 0 || !buffer_.empty()) return;
  auto& seg = segments_[active_];
  if (!(seg.records > 0 && seg.valid == 0) && !compactable(seg)) return;
  close_active();
  after_invalidate(seg);
}

// No more records go to the active segment: its index is written once they are all synced.
void segment_store::close_active() {
  if (active_ == 0) return;
  segments_[active_].slots.shrink_to_fit();
  unindexed_[active_] = std::move(active_index_);
  active_index_.clear();
  active_ = 0;
}

// Written whole under another name, then renamed, and not synced: a crash leaves the old index,
// the new one, or a torn one, and an index that does not check out or match its segment is
// ignored at start (the segment is read instead), so it needs no fdatasync of its own.
void segment_store::write_index(uint64_t first_seq, uint64_t size,
                                const std::vector<format::index_entry>& entries) {
  auto tmp = file_path(first_seq, ".idx.tmp");
  if (write_new_file(tmp, format::encode_index(first_seq, size, entries), false) &&
      ::rename(tmp.c_str(), idx_path(first_seq).c_str()) == 0) {
    dir_dirty_ = true;
    return;
  }
  // Costs only a slower restart: the segment is read instead.
  log(log_level::warn, "storage",
      "queue " + label_ + ": cannot write " + idx_path(first_seq) + ": " + std::strerror(errno));
  ::unlink(tmp.c_str());
  ::unlink(idx_path(first_seq).c_str());
}

void segment_store::write_pending_indexes() {
  for (auto& [first, entries] : unindexed_) {
    auto s = segments_.find(first);
    if (s == segments_.end() || s->second.damaged) continue;
    write_index(first, s->second.size, entries);
  }
  unindexed_.clear();
}

void segment_store::drop_segment(uint64_t first_seq) {
  auto s = segments_.find(first_seq);
  if (s == segments_.end()) return;
  files_->forget(seg_path(first_seq));
  files_->forget(ack_path(first_seq));
  // The segment first: a mark file left alone by a crash is recognised and removed at start.
  ::unlink(seg_path(first_seq).c_str());
  ::unlink(ack_path(first_seq).c_str());
  ::unlink(idx_path(first_seq).c_str());
  unindexed_.erase(first_seq);
  dir_dirty_ = true;
  slot_count_ -= s->second.slots.size();
  segments_.erase(s);
  unsynced_.erase(first_seq);
  candidates_.erase(std::remove(candidates_.begin(), candidates_.end(), first_seq),
                    candidates_.end());
}

void segment_store::sync_written(bool durable) {
  if (!durable) {
    write_pending_indexes();
    unsynced_.clear();
    return;
  }
  if (!sync_failure_.empty()) {
    // An earlier sync failed: a sync that succeeds now proves nothing about those pages.
    failing_.insert(failing_.end(), batch_seqs_.begin(), batch_seqs_.end());
    unsynced_.clear();
    return;
  }
  try {
    for (auto first : unsynced_) {
      if (segments_.count(first) == 0) continue;
      auto h = files_->open(seg_path(first));
      if (::fdatasync(h.fd()) != 0)
        throw std::runtime_error("fdatasync of " + seg_path(first) +
                                 " failed: " + std::strerror(errno));
    }
    write_pending_indexes();  // their segments are synced now
    if (dir_dirty_) sync_directory(dir_);
    dir_dirty_ = false;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    sync_failure_ = last_error_;
    // Whether those bytes are on disk is unknown: the batch must not be confirmed. Its owner
    // reads sync_failure() and logs it once, with what it does about it.
    failing_.insert(failing_.end(), batch_seqs_.begin(), batch_seqs_.end());
  }
  unsynced_.clear();
}

bool segment_store::sync(bool durable) {
  write_buffer();
  write_marks();
  roll_if_wasted();
  sync_written(durable);
  batch_seqs_.clear();
  std::sort(failing_.begin(), failing_.end());
  failing_.erase(std::unique(failing_.begin(), failing_.end()), failing_.end());
  failed_ = std::move(failing_);
  failing_.clear();
  return failed_.empty();
}

void segment_store::destroy() {
  forget_files();
  segments_.clear();
  slot_count_ = 0;
  active_index_.clear();
  unindexed_.clear();
  buffer_.clear();
  buffered_seqs_.clear();
  pending_marks_.clear();
  unsynced_.clear();
  candidates_.clear();
  active_ = 0;
  remove_tree(dir_);
  dir_ready_ = false;
}

uint64_t segment_store::index_bytes() const {
  return slot_count_ * sizeof(slot);
}

std::vector<segment_store::extent> segment_store::extents() const {
  std::vector<extent> out;
  for (const auto& [first, seg] : segments_)
    if (!seg.slots.empty()) out.push_back({seg.slots.front().seq, seg.size});
  return out;
}

bool segment_store::drop_oldest() {
  if (segments_.empty()) return false;
  // Records are buffered for the active segment only (a roll writes them out first); a closed
  // one not synced yet still waits for its fdatasync.
  auto first = segments_.begin()->first;
  if (first == active_ || unsynced_.count(first) != 0) return false;
  drop_segment(first);
  return true;
}

uint64_t segment_store::first_seq() const {
  for (const auto& [first, seg] : segments_)
    if (!seg.slots.empty()) return seg.slots.front().seq;
  return 0;
}

uint64_t segment_store::bytes_on_disk() const {
  uint64_t total = 0;
  for (const auto& [first, seg] : segments_) total += seg.size + seg.marks_size;
  return total + buffer_.size();
}

}  // namespace warren::persistence
