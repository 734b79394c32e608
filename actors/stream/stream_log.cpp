// The stream's log: appending with group commit, reading by offset, retention, recovery.
#include "actors/common/connection_protocol.hpp"
#include "actors/stream/stream_parts.hpp"

#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_set>

namespace warren::stream_parts {

namespace {

// The newest synced messages stay in memory up to this many body bytes, so consumers that keep
// up with the publishers never read the files.
constexpr uint64_t tail_cache_bytes = 8 << 20;

uint64_t seq_of(uint64_t offset) {
  return offset + 1;  // the store's sequence numbers start at 1
}

// The enqueue time of the first record of the segment starting at `first_seq` (0 when unknown);
// remembered, as it never changes.
int64_t segment_time(stream_state& st, uint64_t first_seq) {
  if (auto t = st.segment_times.find(first_seq); t != st.segment_times.end()) return t->second;
  auto r = st.store->read_live(first_seq, 1, 1);
  if (r.messages.empty() || r.messages[0].seq != first_seq) return 0;
  return st.segment_times[first_seq] = r.messages[0].enqueued_at_ms;
}

// The first offset appended at or after `ms`: the last segment that starts no later is read
// until a record is that new (the segments' start times bound the scan to one segment).
uint64_t seek_time(stream_state& st, int64_t ms) {
  if (!st.store) return st.next_offset;
  auto extents = st.store->extents();
  if (extents.empty()) return st.next_offset;
  uint64_t from = extents.front().first_seq;
  for (const auto& e : extents) {
    auto t = segment_time(st, e.first_seq);
    if (t == 0 || t > ms) break;
    from = e.first_seq;
  }
  while (from <= st.durable_end) {
    auto r = st.store->read_live(from, 1024, 1 << 20);
    for (const auto& m : r.messages)
      if (m.seq > st.durable_end || m.enqueued_at_ms >= ms) return m.seq - 1;
    if (r.next_seq <= from) break;
    from = r.next_seq;
  }
  return st.durable_end;
}

// Synced messages join the tail cache; the oldest leave it past its size.
void keep_in_tail(stream_state& st, const std::unordered_set<uint64_t>& failed) {
  for (auto& c : st.unsynced) {
    if (failed.count(c.offset) != 0) continue;
    st.tail_bytes += c.msg->body.size();
    st.tail.push_back(std::move(c));
  }
  st.unsynced.clear();
  while (!st.tail.empty() && st.tail_bytes > tail_cache_bytes) {
    st.tail_bytes -= st.tail.front().msg->body.size();
    st.tail.pop_front();
  }
}

}  // namespace

read_run read(stream_state& st, uint64_t from, size_t max_count, uint64_t max_bytes) {
  read_run out;
  out.next = from;
  if (from >= st.durable_end || max_count == 0) return out;
  uint64_t bytes = 0;
  if (!st.tail.empty() && from >= st.tail.front().offset) {
    auto i = std::lower_bound(st.tail.begin(), st.tail.end(), from,
                              [](const auto& c, uint64_t o) { return c.offset < o; });
    for (; i != st.tail.end() && out.messages.size() < max_count && bytes < max_bytes; ++i) {
      out.messages.push_back(*i);
      bytes += i->msg->body.size();
      out.next = i->offset + 1;
    }
    return out;
  }
  if (!st.store) return out;
  auto r = st.store->read_live(seq_of(from), max_count, max_bytes);
  for (auto& m : r.messages) {
    if (m.seq - 1 >= st.durable_end) break;
    out.messages.push_back({m.seq - 1, std::move(m.msg)});
  }
  out.next = out.messages.empty() ? std::min(r.next_seq - 1, st.durable_end)
                                  : out.messages.back().offset + 1;
  return out;
}

uint64_t first_offset(const stream_state& st) {
  auto first = st.store ? st.store->first_seq() : 0;
  return first != 0 ? first - 1 : st.next_offset;
}

uint64_t message_count(const stream_state& st) {
  return st.next_offset - std::min(first_offset(st), st.next_offset);
}

uint64_t resolve(stream_state& st, const stream_offset_spec& spec) {
  switch (spec.kind) {
    case stream_offset_spec::first:
      return first_offset(st);
    case stream_offset_spec::last: {
      auto extents =
          st.store ? st.store->extents() : std::vector<persistence::segment_store::extent>{};
      return extents.empty() ? st.next_offset : extents.back().first_seq - 1;
    }
    case stream_offset_spec::offset:
      return std::max(static_cast<uint64_t>(spec.value), first_offset(st));
    case stream_offset_spec::timestamp:
      return seek_time(st, spec.value);
    case stream_offset_spec::unset:
    case stream_offset_spec::next:
      break;
  }
  return st.next_offset;
}

void append(self_ptr self, publish_batch& batch) {
  auto& st = self->state;
  auto now = wall_ms();
  for (auto& item : batch.items) {
    auto offset = st.next_offset++;
    st.store->append(seq_of(offset), *item.msg, now);
    st.unsynced.push_back({offset, item.msg});
    st.traffic.count_in(item.msg->body.size());
    st.commits.await(batch, item.seq, seq_of(offset));
  }
  if (st.storage.fsync == persistence::fsync_policy::always)
    on_sync(self);
  else
    schedule_sync(self);
}

// A sync failed (segment_store::sync_failure): what waits for a confirm is nacked, consumers
// are cancelled, and the stream takes and serves nothing until a restart reads its files back.
void sync_failed(self_ptr self) {
  auto& st = self->state;
  mark_sync_failed(st, st.store->sync_failure());
  send_confirms(self, st.commits.refuse_all());
  auto consumers = st.consumers;
  tell_cancelled(self, consumers, st.describe() + " is unavailable: " + st.unavailable);
  for (const auto& c : consumers)
    cancel_consumer(self, c.spec.connection, c.spec.channel, c.spec.tag);
  report_memory(st);
}

void on_sync(self_ptr self) {
  auto& st = self->state;
  if (!st.store) return send_confirms(self, st.commits.refuse_all());
  st.store->sync(st.storage.fsync != persistence::fsync_policy::never);
  std::unordered_set<uint64_t> failed;
  for (auto seq : st.store->failed()) failed.insert(seq - 1);
  if (!failed.empty())
    log(log_level::warn, "stream",
        st.describe() + ": " + std::to_string(failed.size()) +
            " message(s) could not be stored and were refused: " + st.store->last_error());
  if (!st.store->sync_failure().empty()) return sync_failed(self);
  keep_in_tail(st, failed);
  st.durable_end = st.next_offset;
  send_confirms(self, st.commits.synced(st.store->failed()));
  if (st.limits.max_length_bytes) apply_retention(self);
  dispatch(self);
  report_memory(st);
}

void apply_retention(self_ptr self) {
  auto& st = self->state;
  if (!st.store || (!st.limits.max_length_bytes && !st.limits.max_age_ms)) return;
  auto now = wall_ms();
  size_t dropped = 0;
  for (;;) {
    auto extents = st.store->extents();
    if (extents.size() < 2) break;
    uint64_t bytes = 0;
    for (const auto& e : extents) bytes += e.bytes;
    bool over_size =
        st.limits.max_length_bytes && bytes > static_cast<uint64_t>(*st.limits.max_length_bytes);
    // Every record of the oldest segment is older than the next segment's first.
    auto next_start = st.limits.max_age_ms ? segment_time(st, extents[1].first_seq) : 0;
    bool too_old = next_start != 0 && next_start < now - *st.limits.max_age_ms;
    if ((!over_size && !too_old) || !st.store->drop_oldest()) break;
    st.segment_times.erase(extents[0].first_seq);
    ++dropped;
  }
  if (dropped == 0) return;
  auto first = first_offset(st);
  while (!st.tail.empty() && st.tail.front().offset < first) {
    st.tail_bytes -= st.tail.front().msg->body.size();
    st.tail.pop_front();
  }
  skip_to_head(st);
  log(log_level::info, "stream",
      st.describe() + ": retention removed " + std::to_string(dropped) +
          " segment(s); the first offset is now " + std::to_string(first));
}

void recover(self_ptr self) {
  auto& st = self->state;
  persistence::recovery_report report;
  if (!recover_or_unavailable(st, [&] { st.store->recover(report, 0, message_overhead_bytes); }))
    return;
  st.next_offset = st.store->max_seq();
  st.durable_end = st.next_offset;
  if (report.segments > 0)
    log(log_level::info, "stream",
        st.describe() + ": offsets " + std::to_string(first_offset(st)) + " to " +
            std::to_string(st.next_offset) + " (exclusive) in " + std::to_string(report.segments) +
            " segment(s)" + recovery_findings(report));
}

void report_memory(stream_state& st) {
  st.memory.set(st.tail_bytes + st.tail.size() * message_overhead_bytes,
                st.store ? st.store->index_bytes() : 0);
}

}  // namespace warren::stream_parts
