#include "actors/queue/queue_paging.hpp"

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>

namespace warren {

namespace {

// A read-back brings at least this many messages (or this many bytes), so that a consumer of a
// paged queue costs one read per chunk, not one per message.
constexpr size_t chunk_messages = 256;
constexpr uint64_t chunk_bytes = 1 << 20;

uint64_t memory_held(const queue_state& st) {
  return st.ready.bytes() + st.ready.heap_bytes() + st.ready.size() * message_overhead_bytes +
         st.pending.body_bytes() + st.pending.heap_bytes() +
         st.pending.size() * message_overhead_bytes;
}

bool can_page(const queue_state& st) {
  return st.limits.max_priority == 0 && !st.storage.data_dir.empty() &&
         (st.storage.queue_memory_budget != 0 || st.storage.node_memory_budget != 0) &&
         st.unavailable.empty();
}

// The scratch store of a non-durable queue, made when it first pages out.
bool ensure_store(queue_state& st) {
  if (st.store) return true;
  auto id = ++*st.storage.next_scratch_id;
  st.store = std::make_unique<persistence::segment_store>(
      st.storage.scratch_dir(id),
      quote(st.spec.name) + " (vhost " + quote(st.vhost) + ", paged out)", st.storage.segments,
      st.storage.files);
  st.scratch = true;
  return true;
}

void reset_if_drained(queue_state& st) {
  if (st.paged.count != 0) return;
  st.paged = {};
}

// The store's records from paged.from on, read back; what was lost leaves the count.
persistence::read_result read_paged(queue_state& st, uint64_t from, size_t count, uint64_t bytes) {
  auto r = st.store->read_live(from, count, bytes);
  if (r.lost > 0) {
    st.paged.count -= std::min<uint64_t>(st.paged.count, r.lost);
    st.paged.body_bytes -= std::min(st.paged.body_bytes, r.lost_body_bytes);
    log(log_level::error, "queue",
        st.describe() + ": " + std::to_string(r.lost) +
            " paged-out message(s) could not be read back and are lost (see the storage log)");
  }
  return r;
}

}  // namespace

uint64_t ready_count(const queue_state& st) {
  return st.ready.size() + st.paged.count;
}

uint64_t ready_body_bytes(const queue_state& st) {
  return st.ready.bytes() + st.paged.body_bytes;
}

bool should_page_out(const queue_state& st) {
  if (st.paged.count > 0) return true;  // behind what is on disk already, to keep the order
  if (!can_page(st)) return false;
  const auto& s = st.storage;
  return (s.queue_memory_budget != 0 && memory_held(st) >= s.queue_memory_budget) ||
         (s.node_memory_budget != 0 && s.memory->queued_bytes() >= s.node_memory_budget);
}

bool page_out(queue_state& st, uint64_t seq, const message& m, int64_t enqueued_at_ms) {
  if (!can_page(st) || !ensure_store(st)) return false;
  st.store->append(seq, m, enqueued_at_ms);
  if (!st.store->holds(seq)) return false;  // could not even be encoded: logged by the store
  if (st.paged.count++ == 0) st.paged.from = seq;
  st.paged.body_bytes += m.body.size();
  st.paged_unsynced.emplace_back(seq, m.body.size());
  return true;
}

void page_in(queue_state& st, size_t want) {
  if (st.paged.count == 0 || !st.store) return;
  uint64_t budget =
      st.storage.queue_memory_budget != 0 ? st.storage.queue_memory_budget : chunk_bytes * 8;
  uint64_t held = memory_held(st);
  uint64_t room = budget / 2 > held ? budget / 2 - held : 0;
  size_t count = std::max(want, room > 0 ? chunk_messages : size_t{1});
  auto r = read_paged(st, st.paged.from, count, std::max(room, chunk_bytes));
  for (auto& m : r.messages) {
    st.paged.count -= std::min<uint64_t>(st.paged.count, 1);
    st.paged.body_bytes -= std::min<uint64_t>(st.paged.body_bytes, m.msg->body.size());
    st.ready.push_back(entry_from_disk(st, std::move(m)));
  }
  st.paged.from = r.next_seq;
  if (r.messages.empty() && r.lost == 0 && st.paged.count > 0) {
    // Nothing left to read: the count was wrong. Said loudly rather than waited on forever.
    log(log_level::error, "queue",
        st.describe() + ": " + std::to_string(st.paged.count) +
            " paged-out message(s) counted but not found on disk");
    st.paged.count = 0;
  }
  reset_if_drained(st);
}

void refill_head(queue_state& st) {
  while (st.ready.empty() && st.paged.count > 0 && st.store) page_in(st, chunk_messages);
}

void forget_failed_pages(queue_state& st, const std::vector<uint64_t>& failed) {
  for (const auto& [seq, body] : st.paged_unsynced) {
    if (seq < st.paged.from || !std::binary_search(failed.begin(), failed.end(), seq)) continue;
    st.paged.count -= std::min<uint64_t>(st.paged.count, 1);
    st.paged.body_bytes -= std::min(st.paged.body_bytes, body);
  }
  st.paged_unsynced.clear();
  reset_if_drained(st);
}

uint64_t purge_paged(queue_state& st) {
  if (st.paged.count == 0 || !st.store) return 0;
  auto n = st.paged.count;
  st.store->remove_from(st.paged.from);
  st.paged = {};
  return n;
}

std::optional<persistence::recovered_message> find_paged(queue_state& st, const message_id& id) {
  uint64_t from = st.paged.from;
  while (st.paged.count > 0 && st.store) {
    auto r = read_paged(st, from, chunk_messages * 4, chunk_bytes * 4);
    for (auto& m : r.messages)
      if (m.msg->id == id) return std::move(m);
    if (r.next_seq == from) break;
    from = r.next_seq;
    if (r.messages.empty() && r.lost == 0) break;
  }
  return std::nullopt;
}

std::vector<persistence::recovered_message> peek_paged(queue_state& st, uint64_t skip,
                                                       size_t count) {
  std::vector<persistence::recovered_message> out;
  uint64_t from = st.paged.from;
  while (st.paged.count > 0 && st.store && out.size() < count) {
    auto r = read_paged(st, from, chunk_messages * 4, chunk_bytes * 4);
    for (auto& m : r.messages) {
      if (skip > 0)
        --skip;
      else if (out.size() < count)
        out.push_back(std::move(m));
    }
    if (r.next_seq == from || (r.messages.empty() && r.lost == 0)) break;
    from = r.next_seq;
  }
  return out;
}

int64_t expiry_for(const queue_state& st, const message& m, int64_t steady_now,
                   int64_t enqueued_wall_ms) {
  auto ttl = message_ttl(st.limits, m);
  if (!ttl) return 0;
  if (enqueued_wall_ms == 0) return steady_now + *ttl;
  // Time already spent in the queue (before a restart, or on disk) counts; a clock that went
  // back counts as none.
  int64_t spent = std::max<int64_t>(0, wall_ms() - enqueued_wall_ms);
  return steady_now + std::max<int64_t>(*ttl - spent, 0) - (*ttl <= spent ? 1 : 0);
}

ready_list::entry entry_from_disk(const queue_state& st, persistence::recovered_message&& r) {
  auto expires = expiry_for(st, *r.msg, steady_ms(), r.enqueued_at_ms);
  return {std::move(r.msg), r.seq, r.delivered, expires};
}

void report_memory(queue_state& st) {
  st.memory.set(memory_held(st), st.store ? st.store->index_bytes() : 0);
}

}  // namespace warren
