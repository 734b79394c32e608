// Queue actor: owns a queue's ready list, its pending-ack map, its consumers and their credit.
//
// Messages (requests answer; the rest are one-way), declared as code in queue_protocol.hpp:
//   (enqueue_atom, publish_batch)            appends; confirms go to batch.origin as
//                                            (confirm_atom, channel, acked seqs, nacked seqs)
//   (consume_atom, consumer_spec) -> void    ACCESS_REFUSED if exclusivity clashes
//   (cancel_atom, conn, channel, tag, requeue)  its unacked messages are requeued, or (AMQP)
//                                            stay unacked on the channel
//   (credit_atom, conn, channel, tag, n)     the consumer may take n more
//   (settle_atom, conn, delivery ids, kind)  ack / requeue / reject (dead-letter)
//   (close_atom, conn, channel)              a channel closed: drop its consumers, requeue
//                                            what it held
//   (get_atom, conn, channel, no_ack)        -> get_reply
//   (purge_atom)                             -> uint32     ready messages dropped
//   (delete_atom, if_unused, if_empty, force) -> uint32    then the actor quits (force: streams)
//   (stats_atom)                             -> queue_info with traffic counters
//   (declare_atom)                           -> queue_info a redeclare: counts as use
//   (consumers_atom)                         -> std::vector<consumer_info>
//   (lookup_atom, message_id)                -> lookup_reply
//   (sync_atom), (compact_atom)              to itself: group commit, compaction
// Outgoing: (deliver_atom, channel, tag, no_ack, deliveries) to consumers' connections;
// (cancelled_atom, channel, tag, reason) when the queue goes; (unused_atom, name, self) to the
// vhost when auto-delete or x-expires says the queue should go; (dead_atom, exchange, messages)
// to the vhost for dead-lettering.
//
// Unavailable: a durable queue whose folder cannot be read keeps its files untouched, nacks
// publishes routed to it and answers consume, get, purge and delete with RESOURCE_ERROR naming
// the reason, until a restart finds the folder readable.
//
// Consumers: the queue serves its highest-priority consumers (x-priority) first, round-robin
// among equals, and lower ones while those have no credit; a single-active-consumer queue
// serves only the first of its consumers (by priority, then age) until it goes.
//
// Limits: x-max-length and x-max-length-bytes (bodies of ready messages) with x-overflow
// drop-head (the oldest go, dead-lettered as "maxlen"), reject-publish (the new message is
// nacked) or reject-publish-dlx (nacked and dead-lettered).
//
// Paging (queue_paging.hpp): past its memory budget a queue keeps new messages on disk only
// and reads them back in order, ahead of its consumers' credit.
//
// Credit: a consumer starts with consumer_spec::initial_credit and is sent messages only while
// it has credit left; its connection grants more as deliveries are acked (prefetch) or written
// to the network (unlimited / no-ack). So no mailbox grows without bound on a slow consumer.
#pragma once

#include "actors/common/queue_protocol.hpp"
#include "actors/queue/consumer_set.hpp"
#include "actors/queue/pending_acks.hpp"
#include "actors/queue/queue_arguments.hpp"
#include "actors/queue/queue_core.hpp"
#include "actors/queue/ready_list.hpp"
#include "actors/storage/memory_ledger.hpp"
#include "actors/storage/storage_context.hpp"
#include "persistence/segment_store.hpp"

#include <caf/actor_addr.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <deque>
#include <unordered_map>
#include <unordered_set>

namespace warren {

struct queue_state : queue_core {
  using ready_entry = ready_list::entry;
  using pending_entry = pending_acks<caf::actor>::entry;

  ready_list ready;
  pending_acks<caf::actor> pending;  // handed out, not settled yet
  consumer_set consumers;
  uint64_t next_seq = 0;
  bool had_consumer = false;
  bool tick_scheduled = false;
  int64_t last_used_ms = 0;

  // Durable queues keep persistent messages in their segment store (queue_core::store);
  // confirms for those wait for the next group commit.
  persistence::fsync_policy fsync = persistence::fsync_policy::batch;
  bool compact_scheduled = false;

  // Paging. Every ready message from paged.from on is in the store only; those before it (and
  // the head of the queue, always) are in `ready`.
  struct paged_region {
    uint64_t from = 0;  // 0 = nothing paged out
    uint64_t count = 0;
    uint64_t body_bytes = 0;
  };
  paged_region paged;
  // Paged-out messages written since the last sync, (seq, body bytes): if the sync fails they
  // are gone and leave the count.
  std::vector<std::pair<uint64_t, uint64_t>> paged_unsynced;
  bool scratch = false;  // `store` is a scratch folder of a non-durable queue, not kept

  static inline const char* name = "queue";
};

/// `storage` is used when the queue is durable (and not exclusive): its messages then live in
/// storage.queue_dir(queue_id), recovered when the actor starts.
queue_actor_type::behavior_type queue_actor(queue_actor_type::stateful_pointer<queue_state> self,
                                            std::string vhost, queue_spec spec, queue_limits limits,
                                            caf::actor vhost_actor, uint64_t queue_id,
                                            storage_context storage);

}  // namespace warren
