// queue_paging: a queue bigger than its memory budget keeps only its head in memory.
//
// Once a queue holds more than storage_context::queue_memory_budget bytes of messages in memory
// (bodies plus message_overhead_bytes each), or all queues together hold more than
// node_memory_budget, each new message is written to the queue's store and not kept in memory:
// a durable queue's own segment files (where a persistent message goes anyway, so paging it
// costs nothing), or for a non-durable queue a scratch folder under the data dir that no restart
// keeps. From then on every later message goes the same way, so the paged messages are always
// the tail of the queue, in order. As consumers take messages from the head, paged ones are read
// back in runs (one pread per run of records), as many as the consumers' credit asks for and at
// least a chunk, and checked against their checksums.
//
// Memory per paged message: the store's 16-byte slot; nothing else.
//
// Priority queues (x-max-priority) are not paged: their order is not the order on disk.
// Caveats: a paged record that no longer checks out when it is read back is lost, reported with
// its file and offset; a transient message paged out is not kept across a restart.
#pragma once

#include "actors/queue/queue_actor.hpp"

#include <optional>

namespace warren {

/// Whether the next new message goes to disk only.
bool should_page_out(const queue_state& st);

/// Writes `m` to the store as paged out (making the scratch store of a non-durable queue on
/// first use). False when it cannot be: the message then stays in memory.
bool page_out(queue_state& st, uint64_t seq, const message& m, int64_t enqueued_at_ms);

/// Reads paged messages back to the end of the ready list: `want` of them, and at least a chunk
/// while the queue's budget has room. Records lost to damage leave the count (and are logged).
void page_in(queue_state& st, size_t want);

/// Keeps the head of the queue in memory: pages in a chunk when `ready` ran empty.
void refill_head(queue_state& st);

/// A sync could not store `failed`: those of them that were paged out are gone.
void forget_failed_pages(queue_state& st, const std::vector<uint64_t>& failed);

/// Drops every paged message (a purge); returns how many.
uint64_t purge_paged(queue_state& st);

/// The paged message with id `id`, read from disk (lookup).
std::optional<persistence::recovered_message> find_paged(queue_state& st, const message_id& id);

/// Up to `count` paged messages, read from disk, after skipping the first `skip` (peek).
std::vector<persistence::recovered_message> peek_paged(queue_state& st, uint64_t skip,
                                                       size_t count);

/// The ready entry of a message read back from disk, its TTL counted from its enqueue time.
ready_list::entry entry_from_disk(const queue_state& st, persistence::recovered_message&& r);

/// When a message enqueued at `enqueued_wall_ms` (0: now) expires, on the steady clock; 0 for
/// never.
int64_t expiry_for(const queue_state& st, const message& m, int64_t steady_now,
                   int64_t enqueued_wall_ms = 0);

/// Ready messages in all: in memory and paged out.
uint64_t ready_count(const queue_state& st);
uint64_t ready_body_bytes(const queue_state& st);

/// Updates the queue's share of the node's memory ledger.
void report_memory(queue_state& st);

}  // namespace warren
