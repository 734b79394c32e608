#include "actors/queue/queue_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/behavior_parts.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/queue/dead_lettering.hpp"
#include "actors/queue/queue_paging.hpp"
#include "actors/queue/queue_views.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include <caf/send.hpp>

namespace warren {

namespace {

using self_ptr = queue_actor_type::stateful_pointer<queue_state>;

// To an untyped actor (the vhost), as this actor: CAF lets typed actors send() only to typed ones.
template <class... Ts>
void send_untyped(self_ptr self, const caf::actor& dest, Ts&&... xs) {
  caf::send_as(caf::actor_cast<caf::actor>(self), dest, std::forward<Ts>(xs)...);
}

// A connection, through the part of its protocol queues use.
connection_broker_api connection_of(const caf::actor& conn) {
  return caf::actor_cast<connection_broker_api>(conn);
}

bool expired(int64_t expires_at, int64_t now) {
  return expires_at != 0 && expires_at < now;
}

// A message left this queue for good (acked, dropped, expired, dead-lettered, purged).
void forget(self_ptr self, uint64_t seq) {
  auto& st = self->state;
  if (!st.store) return;
  st.store->remove(seq);
  schedule_sync(self);
}

// It may reach a consumer: after a crash it comes back marked redelivered. The mark is written
// by write_delivered_marks() before the delivery leaves the queue.
void mark_delivered(self_ptr self, uint64_t seq) {
  auto& st = self->state;
  if (st.store) st.store->mark_delivered(seq);
}

// Called before deliveries are sent: a consumer never sees a message whose delivered mark could
// be lost to a kill -9 (the mark is in the file; only a power loss could still take it).
void write_delivered_marks(self_ptr self) {
  auto& st = self->state;
  if (st.store) st.store->write_marks();
}

// Compacts one segment per message while the store has one ready, so publishes and acks get
// their turn in between; candidates still being drained are looked at again a second later.
void keep_compacting(self_ptr self, bool at_once = false) {
  auto& st = self->state;
  if (!st.store || st.compact_scheduled || !st.store->wants_compaction()) return;
  st.compact_scheduled = true;
  if (at_once)
    self->send(self, compact_atom::value);
  else
    self->delayed_send(self, std::chrono::seconds(1), compact_atom::value);
}

// A sync failed (segment_store::sync_failure): what waits for a confirm is nacked, consumers
// are cancelled, and the queue takes and serves nothing until a restart reads its files back.
// Deliveries still unacked stay with their channels; their messages are in the files.
void sync_failed(self_ptr self) {
  auto& st = self->state;
  mark_sync_failed(st, st.store->sync_failure());
  st.paged = {};  // they stay in the files, for the restart: without the store, unreachable
  st.paged_unsynced.clear();
  send_confirms(self, st.commits.refuse_all());
  auto consumers = st.consumers.all();
  tell_cancelled(self, consumers, st.describe() + " is unavailable: " + st.unavailable);
  for (const auto& c : consumers)
    st.consumers.remove(c.spec.connection, c.spec.channel, c.spec.tag);
  report_memory(st);
}

void on_sync(self_ptr self) {
  auto& st = self->state;
  if (!st.store) return send_confirms(self, st.commits.refuse_all());
  bool durable = st.fsync != persistence::fsync_policy::never && !st.scratch;
  st.store->sync(durable);
  const auto& failed = st.store->failed();
  if (!failed.empty()) {
    // Not stored (disk full, I/O error): the publishers get negative confirms, and messages not
    // handed out yet are withdrawn rather than served without the promised durability.
    log(log_level::warn, "queue",
        st.describe() + ": " + std::to_string(failed.size()) +
            " message(s) could not be stored and were refused: " + st.store->last_error());
    std::unordered_set<uint64_t> refused(failed.begin(), failed.end());
    st.ready.remove_if([&](const auto& e) { return refused.count(e.seq) != 0; });
  }
  forget_failed_pages(st, failed);
  refill_head(st);
  report_memory(st);
  send_confirms(self, st.commits.synced(failed));
  if (!st.store->sync_failure().empty()) return sync_failed(self);
  keep_compacting(self);
}

// Hands messages to the dead-letter exchange, if the queue has one; otherwise they are dropped.
void dead_letter(self_ptr self, std::vector<message_ptr> msgs, const char* reason) {
  auto& st = self->state;
  if (msgs.empty() || !st.limits.dead_letter_exchange) return;
  std::vector<message_ptr> out;
  out.reserve(msgs.size());
  for (auto& m : msgs) out.push_back(dead_letter_copy(st.spec.name, st.limits, *m, reason));
  send_untyped(self, st.vhost_actor, dead_atom::value, *st.limits.dead_letter_exchange,
               std::move(out));
}

// Drops expired messages from the head of the ready list (TTL applies at the head, as in
// RabbitMQ: a message behind an unexpired one waits for it), reading paged ones back as the
// head moves on to them (a bounded number of chunks per call; the next tick goes on).
void expire_head(self_ptr self, int64_t now) {
  auto& st = self->state;
  std::vector<queue_state::ready_entry> expired_entries;
  for (int chunks = 0; chunks < 16; ++chunks) {
    st.ready.take_expired(now, expired_entries);
    if (!st.ready.empty() || st.paged.count == 0) break;
    refill_head(st);
  }
  std::vector<message_ptr> gone;
  for (auto& e : expired_entries) {
    forget(self, e.seq);
    gone.push_back(std::move(e.msg));
  }
  dead_letter(self, std::move(gone), "expired");
  report_memory(st);
}

void schedule_tick(self_ptr self);

// Puts handed-out messages back where they were in the ready list (by arrival), also when they
// are settled one at a time: rejecting m1, m2 and m3 in turn gives m1, m2, m3 again, as RabbitMQ.
void requeue(self_ptr self, std::vector<queue_state::pending_entry> entries) {
  std::vector<ready_list::entry> back;
  back.reserve(entries.size());
  for (auto& e : entries) back.push_back({std::move(e.msg), e.seq, true, e.expires_at});
  self->state.ready.put_back(std::move(back));
}

// Takes hand-out `id` out if `conn` holds it, keeping its consumer's unacked count true.
std::optional<queue_state::pending_entry> take_pending(queue_state& st, uint64_t id,
                                                       const caf::actor& conn) {
  auto entry = st.pending.take(id, conn);
  if (!entry) return entry;
  if (auto* c = st.consumers.find(entry->consumer); c != nullptr && c->unacked > 0) --c->unacked;
  return entry;
}

// Hands `entry` to consumer `c`, adding it to `out`.
void hand_out(self_ptr self, consumer_set::consumer& c, queue_state::ready_entry&& entry,
              std::vector<queued_delivery>& out) {
  auto& st = self->state;
  --c.credit;
  auto id = st.pending.next_id();
  if (c.spec.no_ack) {
    forget(self, entry.seq);
  } else {
    mark_delivered(self, entry.seq);
    st.pending.hold(
        id, {entry.msg, entry.seq, entry.expires_at, c.spec.connection, c.key, c.spec.channel});
    ++c.unacked;
  }
  st.traffic.count_out(entry.msg->body.size(), entry.redelivered);
  out.push_back({id, std::move(entry.msg), entry.redelivered != 0});
}

// Paged messages are read back ahead of the consumers: as many as their credit asks for.
void read_ahead(queue_state& st) {
  if (st.paged.count == 0) return;
  uint64_t credit = 0;
  for (const auto& c : st.consumers.all()) credit += c.credit;
  if (credit > st.ready.size()) page_in(st, static_cast<size_t>(credit - st.ready.size()));
}

// Sends ready messages to consumers with credit, one batch per consumer.
void dispatch(self_ptr self) {
  auto& st = self->state;
  if (st.consumers.empty() || (st.ready.empty() && st.paged.count == 0)) return report_memory(st);
  read_ahead(st);
  auto now = steady_ms();
  const auto& all = st.consumers.all();
  std::vector<std::vector<queued_delivery>> out(all.size());
  std::vector<message_ptr> expired_msgs;
  while (!st.ready.empty()) {
    auto* c = st.consumers.pick(st.limits.single_active_consumer);
    if (c == nullptr) break;
    auto entry = st.ready.take_front();
    if (st.ready.empty()) read_ahead(st);
    if (expired(entry.expires_at, now)) {
      forget(self, entry.seq);
      expired_msgs.push_back(std::move(entry.msg));
      st.consumers.give_turn_back();
      continue;
    }
    hand_out(self, *c, std::move(entry), out[static_cast<size_t>(c - all.data())]);
  }
  write_delivered_marks(self);
  for (size_t i = 0; i < all.size(); ++i) {
    if (out[i].empty()) continue;
    const auto& c = all[i];
    self->send(connection_of(c.spec.connection), deliver_atom::value, c.spec.channel, c.spec.tag,
               c.spec.no_ack, std::move(out[i]));
  }
  dead_letter(self, std::move(expired_msgs), "expired");
  refill_head(st);
  report_memory(st);
}

// The queue lost a consumer: tell the vhost when auto-delete or x-expires now applies.
void after_consumer_left(self_ptr self) {
  auto& st = self->state;
  st.last_used_ms = steady_ms();
  if (st.consumers.empty() && st.had_consumer && st.spec.auto_delete)
    send_untyped(self, st.vhost_actor, unused_atom::value, st.spec.name,
                 caf::actor_cast<caf::actor>(self));
  else
    schedule_tick(self);
}

// Everything a connection (or one of its channels) held goes back; its consumers go.
void release(self_ptr self, const caf::actor_addr& connection, std::optional<uint16_t> channel) {
  auto& st = self->state;
  auto matches = [&](const caf::actor& conn, uint16_t ch) {
    return conn.address() == connection && (!channel || *channel == ch);
  };
  requeue(self, st.pending.take_all_if(matches));
  if (st.consumers.remove_all(connection, channel) > 0) after_consumer_left(self);
  dispatch(self);
}

void on_tick(self_ptr self) {
  auto& st = self->state;
  st.tick_scheduled = false;
  auto now = steady_ms();
  expire_head(self, now);
  if (st.limits.expires_ms && st.consumers.empty() &&
      now - st.last_used_ms >= *st.limits.expires_ms) {
    send_untyped(self, st.vhost_actor, unused_atom::value, st.spec.name,
                 caf::actor_cast<caf::actor>(self));
    return;
  }
  schedule_tick(self);
}

// Arms one timer for the next thing that can happen by itself: the head message expiring or the
// queue expiring unused.
void schedule_tick(self_ptr self) {
  auto& st = self->state;
  if (st.tick_scheduled) return;
  int64_t next = 0;
  if (auto head = st.ready.next_expiry(); head != 0) next = head + 1;
  if (st.limits.expires_ms && st.consumers.empty()) {
    int64_t at = st.last_used_ms + *st.limits.expires_ms;
    next = next == 0 ? at : std::min(next, at);
  }
  if (next == 0) return;
  st.tick_scheduled = true;
  auto delay = std::max<int64_t>(next - steady_ms(), 1);
  self->delayed_send(self, std::chrono::milliseconds(delay), tick_atom::value);
}

// Whether one more message of `size` body bytes would break x-max-length or x-max-length-bytes.
bool over_limit(const queue_state& st, size_t size) {
  const auto& l = st.limits;
  return (l.max_length && ready_count(st) + 1 > static_cast<uint64_t>(*l.max_length)) ||
         (l.max_length_bytes &&
          ready_body_bytes(st) + size > static_cast<uint64_t>(*l.max_length_bytes));
}

// Stores a message the queue keeps (paged out, or persistent in a durable queue); false when
// it stays in memory only. Its confirm then waits for the group commit.
bool store_message(self_ptr self, publish_batch& batch, const publish_item& item, uint64_t seq,
                   int64_t now, std::vector<uint64_t>& acked, std::vector<uint64_t>& nacked) {
  auto& st = self->state;
  const auto& m = *item.msg;
  int64_t enqueued_at = message_ttl(st.limits, m) ? wall_ms() : 0;
  bool paged = should_page_out(st) && page_out(st, seq, m, enqueued_at);
  if (!paged) {
    st.ready.push_back({item.msg, seq, false, expiry_for(st, m, now)});
    if (!st.store || st.scratch || !m.persistent()) return false;
    st.store->append(seq, m, enqueued_at);
  }
  if (st.fsync == persistence::fsync_policy::always && !st.scratch) {
    // Each message is on disk before anything else happens.
    st.store->sync(true);
    bool ok = st.store->failed().empty();
    if (paged) forget_failed_pages(st, st.store->failed());
    if (!ok && !paged) st.ready.remove_if([&](const auto& e) { return e.seq == seq; });
    if (item.seq != 0) (ok ? acked : nacked).push_back(item.seq);
    if (!st.store->sync_failure().empty()) sync_failed(self);
  } else {
    st.commits.await(batch, item.seq, seq);
    schedule_sync(self);
  }
  return true;
}

void enqueue(self_ptr self, publish_batch& batch) {
  auto& st = self->state;
  // An unavailable queue takes nothing: confirmed publishes are nacked.
  if (!st.unavailable.empty()) return send_confirms(self, refusal_of(batch));
  auto now = steady_ms();
  std::vector<uint64_t> acked, nacked;
  std::vector<message_ptr> overflowed;
  size_t cycling = 0;
  for (auto& item : batch.items) {
    if (!st.unavailable.empty()) {  // a sync failed on the way (fsync=always)
      if (item.seq != 0) nacked.push_back(item.seq);
      continue;
    }
    if (dead_letter_cycle(*item.msg, st.spec.name)) {
      ++cycling;
      continue;
    }
    auto size = item.msg->body.size();
    if (over_limit(st, size)) {
      if (st.limits.overflow != overflow_policy::drop_head) {
        if (item.seq != 0) nacked.push_back(item.seq);
        if (st.limits.overflow == overflow_policy::reject_publish_dlx)
          overflowed.push_back(item.msg);
        continue;
      }
      while (!st.ready.empty() && over_limit(st, size)) {
        auto head = st.ready.take_front();
        forget(self, head.seq);
        overflowed.push_back(std::move(head.msg));
        refill_head(st);
      }
      if (over_limit(st, size)) {  // it could not be kept even in an empty queue
        overflowed.push_back(item.msg);
        if (item.seq != 0) acked.push_back(item.seq);
        continue;
      }
    }
    auto seq = ++st.next_seq;
    st.traffic.count_in(item.msg->body.size());
    if (store_message(self, batch, item, seq, now, acked, nacked)) continue;
    if (item.seq != 0) acked.push_back(item.seq);
  }
  if (batch.origin && (!acked.empty() || !nacked.empty()))
    self->send(connection_of(batch.origin), confirm_atom::value, batch.channel, std::move(acked),
               std::move(nacked));
  if (cycling > 0)
    log(log_level::warn, "queue",
        st.describe() + ": dropped " + std::to_string(cycling) +
            " dead-lettered message(s) that had already died here (a dead-letter cycle)");
  dead_letter(self, std::move(overflowed), "maxlen");
  dispatch(self);
  schedule_tick(self);
}

// Loads the queue's messages from its segment files, in their original order; messages that
// may have reached a consumer before a crash come back marked redelivered.
void recover(self_ptr self) {
  auto& st = self->state;
  auto started = steady_ms();
  persistence::recovery_report report;
  persistence::recovered_queue recovered;
  // A queue that may page starts with a quarter of its budget in memory (consumers read the
  // rest back as they go); what stays on disk is indexed from the segments' index files.
  uint64_t limit = UINT64_MAX;
  auto budget = st.storage.queue_memory_budget ? st.storage.queue_memory_budget
                                               : st.storage.node_memory_budget;
  if (st.limits.max_priority == 0 && budget != 0) limit = budget / 4;
  if (!recover_or_unavailable(
          st, [&] { recovered = st.store->recover(report, limit, message_overhead_bytes); }))
    return;
  auto now = steady_ms();
  for (auto& r : recovered.in_memory) st.ready.push_back(entry_from_disk(st, std::move(r)));
  st.paged = {recovered.paged_from, recovered.paged_count, recovered.paged_body_bytes};
  refill_head(st);
  report_memory(st);
  st.next_seq = st.store->max_seq();
  if (report.segments > 0)
    log(log_level::info, "queue",
        st.describe() + ": recovered " + std::to_string(ready_count(st)) + " message(s) from " +
            std::to_string(report.segments) + " segment(s) in " + std::to_string(now - started) +
            " ms" +
            (st.paged.count ? " (" + std::to_string(st.paged.count) + " left on disk)" : "") +
            recovery_findings(report));
  keep_compacting(self);
}

// A consumer joins: exclusivity is checked, it goes behind the consumers of its priority.
caf::result<void> add_consumer(self_ptr self, consumer_spec& spec) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  if (st.consumers.any_exclusive())
    return make_broker_error(reply_code::access_refused,
                             st.describe() + " has an exclusive consumer");
  if (spec.exclusive && !st.consumers.empty())
    return make_broker_error(
        reply_code::access_refused,
        "cannot consume exclusively from " + st.describe() + ": it has other consumers");
  watch(self, spec.connection);
  st.consumers.add(std::move(spec));
  st.had_consumer = true;
  st.last_used_ms = steady_ms();
  // Answer first, then deliver: the consumer's connection learns it consumes before its first
  // delivery arrives (AMQP clients refuse deliveries for tags they do not know).
  auto rp = self->make_response_promise<void>();
  deliver_unit(rp);
  dispatch(self);
  return rp;
}

// A consumer leaves: its unacked messages are requeued, or (AMQP's basic.cancel) stay with its
// channel to be settled like gets.
void cancel_consumer(self_ptr self, const caf::actor& conn, uint16_t channel,
                     const std::string& tag, bool requeue_unacked) {
  auto& st = self->state;
  auto removed = st.consumers.remove(conn, channel, tag);
  if (!removed) return;
  auto key = *removed;
  requeue(self, st.pending.consumer_left(key, requeue_unacked));
  after_consumer_left(self);
  dispatch(self);
}

void add_credit(self_ptr self, const caf::actor& conn, uint16_t channel, const std::string& tag,
                uint32_t n) {
  auto* c = self->state.consumers.find(conn, channel, tag);
  if (c == nullptr) return;
  c->credit += n;
  dispatch(self);
}

void settle(self_ptr self, const caf::actor& conn, const std::vector<uint64_t>& ids,
            settle_kind kind) {
  auto& st = self->state;
  std::vector<queue_state::pending_entry> back;
  std::vector<message_ptr> rejected;
  for (auto id : ids) {
    auto taken = take_pending(st, id, conn);
    if (!taken) continue;
    auto& entry = *taken;
    if (kind == settle_kind::requeue) {
      back.push_back(std::move(entry));
      continue;
    }
    forget(self, entry.seq);
    if (kind == settle_kind::ack) ++st.traffic.acked;
    if (kind == settle_kind::reject) rejected.push_back(std::move(entry.msg));
  }
  requeue(self, std::move(back));
  dead_letter(self, std::move(rejected), "rejected");
  dispatch(self);
}

caf::result<get_reply> get_one(self_ptr self, const caf::actor& conn, uint16_t channel,
                               bool no_ack) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  st.last_used_ms = steady_ms();
  expire_head(self, st.last_used_ms);
  get_reply reply;
  refill_head(st);
  if (st.ready.empty()) return reply;
  auto entry = st.ready.take_front();
  refill_head(st);
  reply.found = true;
  reply.delivery = {st.pending.next_id(), entry.msg, entry.redelivered != 0};
  reply.remaining = static_cast<uint32_t>(std::min<uint64_t>(ready_count(st), UINT32_MAX));
  st.traffic.count_out(entry.msg->body.size(), entry.redelivered);
  if (no_ack) {
    forget(self, entry.seq);
  } else {
    mark_delivered(self, entry.seq);
    watch(self, conn);
    st.pending.hold(reply.delivery.delivery_id,
                    {std::move(entry.msg), entry.seq, entry.expires_at, conn, 0, channel});
  }
  write_delivered_marks(self);
  schedule_tick(self);
  report_memory(st);
  return reply;
}

caf::result<uint32_t> purge(self_ptr self) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  auto n = static_cast<uint32_t>(std::min<uint64_t>(ready_count(st), UINT32_MAX));
  st.ready.for_each([&](const auto& e) { forget(self, e.seq); });
  st.ready.clear();
  if (purge_paged(st) > 0) schedule_sync(self);
  report_memory(st);
  return n;
}

// Deletes the queue (if allowed): consumers are told, the files go, publishes still waiting for
// a sync are nacked (they are not stored now), and the actor quits.
caf::result<uint32_t> delete_queue(self_ptr self, bool if_unused, bool if_empty) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  if (auto refused = delete_precondition(st, st.consumers.size(), ready_count(st), if_unused,
                                         if_empty, "message(s) ready"))
    return refused;
  auto n = static_cast<uint32_t>(std::min<uint64_t>(ready_count(st), UINT32_MAX));
  finish_delete(self, st.consumers.all());
  return n;
}

void compact(self_ptr self) {
  auto& st = self->state;
  st.compact_scheduled = false;
  if (!st.store) return;
  auto before = st.store->compactions();
  st.store->compact_one();
  keep_compacting(self, st.store->compactions() != before);
}

// Opens the queue's files (durable queues) and recovers its messages.
void open_store(self_ptr self, uint64_t queue_id, const storage_context& storage) {
  auto& st = self->state;
  st.storage = storage;
  st.memory = memory_share(storage.memory);
  if (!st.spec.durable || st.spec.exclusive || storage.data_dir.empty()) return;
  st.fsync = storage.fsync;
  st.store = std::make_unique<persistence::segment_store>(
      storage.queue_dir(queue_id), quote(st.spec.name) + " (vhost " + quote(st.vhost) + ")",
      storage.segments, storage.files);
  recover(self);
}

queue_control_api::behavior_type control_behavior(self_ptr self) {
  return {
      [=](enqueue_atom, publish_batch& batch) { enqueue(self, batch); },
      [=](purge_atom) { return purge(self); },
      [=](delete_atom, bool if_unused, bool if_empty, bool) {
        return delete_queue(self, if_unused, if_empty);
      },
      [=](declare_atom) {
        self->state.last_used_ms = steady_ms();  // a redeclare counts as use for x-expires
        return queue_views::info_of(self->state);
      },
      [=](stats_atom) { return queue_views::info_of(self->state); },
      [=](consumers_atom) { return queue_views::consumers_of(self->state); },
      [=](lookup_atom, const message_id& id) { return queue_views::lookup(self->state, id); },
      [=](peek_atom, uint64_t from, uint32_t count) {
        return queue_views::peek(self->state, from, count);
      },
      [=](tick_atom) { on_tick(self); },
      [=](sync_atom) { on_sync(self); },
      [=](compact_atom) { compact(self); },
  };
}

}  // namespace

queue_actor_type::behavior_type queue_actor(queue_actor_type::stateful_pointer<queue_state> self,
                                            std::string vhost, queue_spec spec, queue_limits limits,
                                            caf::actor vhost_actor, uint64_t queue_id,
                                            storage_context storage) {
  install_actor_defaults(self, "queue");
  auto& st = self->state;
  st.vhost = std::move(vhost);
  st.spec = std::move(spec);
  st.limits = std::move(limits);
  st.ready = ready_list(st.limits.max_priority);
  st.vhost_actor = std::move(vhost_actor);
  st.last_used_ms = steady_ms();
  open_store(self, queue_id, storage);
  schedule_tick(self);
  // Node shutdown writes what is pending (flag edits, a last batch) before going.
  install_queue_handlers(self, on_sync, [](self_ptr self, const caf::actor_addr& conn) {
    release(self, conn, std::nullopt);
  });
  return join_parts<queue_actor_type, queue_consumer_api, queue_control_api>(
      consumer_behavior<self_ptr>(
          self, {add_consumer, cancel_consumer, add_credit, settle, release, get_one}),
      control_behavior(self));
}

}  // namespace warren
