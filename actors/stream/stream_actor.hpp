// Stream actor: a queue declared with x-queue-type=stream, an append-only log (DESIGN §5).
//
// It takes the queue protocol (queue_protocol.hpp), so exchanges, vhosts and connections treat
// it as any queue, and adds (stream_atom, stream_command) -> stream_reply for commits, group
// listings and reads by offset.
//
// Every message is appended to the stream's segment files with its enqueue time and gets the
// next offset (0, 1, 2...; offset = the store's sequence number - 1). Consumers are sent only
// what a group commit has made durable, so an offset a consumer saw names the same message after
// any crash. Nothing is removed on ack: retention drops whole segments from the head while the
// log is over x-max-length-bytes or all of a segment is older than x-max-age; the segment being
// appended to always stays.
//
// Consumers: each starts at an offset spec (stream_offset_spec) and reads on with credit, as a
// classic queue's consumers do; acks only return credit. A consumer with a group shares the
// group's cursor with the group's other consumers (each message goes to one of them) and the
// group's committed offset, stored in LMDB: explicitly (commit), every
// storage.stream_commit_acks acks, every storage.stream_commit_interval_ms, and when the group's
// last consumer leaves. A group's first consumer without an offset resumes after the committed
// offset. get and purge are refused (PRECONDITION_FAILED), as RabbitMQ refuses them on streams.
//
// Delete refuses (PRECONDITION_FAILED, naming them and their lag) while some group has not
// reached the end, unless forced.
#pragma once

#include "actors/common/queue_protocol.hpp"
#include "actors/queue/queue_arguments.hpp"
#include "actors/queue/queue_core.hpp"
#include "actors/storage/memory_ledger.hpp"
#include "actors/storage/storage_context.hpp"
#include "actors/stream/stream_group.hpp"
#include "persistence/segment_store.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace warren {

using stream_own_api =
    caf::typed_actor<caf::replies_to<stream_atom, stream_command>::with<stream_reply>,
                     caf::reacts_to<flushed_atom>>;
using stream_actor_type = queue_actor_type::extend_with<stream_own_api>;

struct stream_state : queue_core {
  struct consumer {
    uint64_t key = 0;
    consumer_spec spec;
    uint32_t credit = 0;
    uint32_t unacked = 0;
    uint64_t cursor = 0;  // without a group: the next offset it reads
  };
  struct in_flight {
    uint64_t offset;
    uint64_t consumer;  // its key
    caf::actor connection;
    uint16_t channel;
  };
  struct cached {
    uint64_t offset;
    message_ptr msg;
  };

  uint64_t queue_id = 0;

  uint64_t next_offset = 0;      // the offset the next message gets
  uint64_t durable_end = 0;      // offsets below it are synced: consumers may read them
  std::vector<cached> unsynced;  // appended since the last sync
  std::deque<cached> tail;       // the newest synced messages, read from memory
  uint64_t tail_bytes = 0;
  std::map<uint64_t, int64_t> segment_times;  // first seq of a segment -> its first enqueue time

  std::vector<consumer> consumers;
  uint64_t next_consumer_key = 0;
  std::unordered_map<uint64_t, in_flight> held;  // by delivery id
  uint64_t next_delivery_id = 0;
  std::map<std::string, stream_group> groups;
  bool dispatch_scheduled = false;
  // Group listings wait for the commits asked for before them, so that they show what is stored.
  uint32_t commits_in_flight = 0;
  std::vector<caf::typed_response_promise<stream_reply>> waiting_listings;

  static inline const char* name = "stream";
};

/// `committed` holds the committed offsets of its groups, as loaded from LMDB.
stream_actor_type::behavior_type stream_actor(
    stream_actor_type::stateful_pointer<stream_state> self, std::string vhost, queue_spec spec,
    queue_limits limits, caf::actor vhost_actor, uint64_t queue_id, storage_context storage,
    std::map<std::string, int64_t> committed);

}  // namespace warren
