// The stream actor's parts (stream_actor.hpp), shared by its files: the log (stream_log.cpp),
// its consumers and groups (stream_consumers.cpp), the actor (stream_actor.cpp).
#pragma once

#include "actors/stream/stream_actor.hpp"
#include "core/clock.hpp"

#include <optional>

namespace warren::stream_parts {

using self_ptr = stream_actor_type::stateful_pointer<stream_state>;

// --- the log (stream_log.cpp) ------------------------------------------------------------------

/// Messages from offset `from` on that consumers may read (synced), in order: at most
/// `max_count`, stopping after `max_bytes` of bodies. `next` is where reading goes on (past
/// records that no longer checked out, which the store reports and drops).
struct read_run {
  std::vector<stream_state::cached> messages;
  uint64_t next = 0;
};
read_run read(stream_state& st, uint64_t from, size_t max_count, uint64_t max_bytes);

uint64_t first_offset(const stream_state& st);
/// Where an offset spec starts reading now.
uint64_t resolve(stream_state& st, const stream_offset_spec& spec);
/// Messages in the log (offsets first_offset .. next_offset - 1).
uint64_t message_count(const stream_state& st);

/// Appends a publish batch; confirms wait for the group commit.
void append(self_ptr self, publish_batch& batch);
/// The group commit: syncs, confirms, makes the batch readable, applies size retention.
void on_sync(self_ptr self);
/// Drops whole segments from the head as retention says; consumers skip what went.
void apply_retention(self_ptr self);
void recover(self_ptr self);
void report_memory(stream_state& st);

// --- consumers and groups (stream_consumers.cpp) -----------------------------------------------

caf::result<void> add_consumer(self_ptr self, consumer_spec& spec);
void cancel_consumer(self_ptr self, const caf::actor& conn, uint16_t channel,
                     const std::string& tag);
/// A connection (or one of its channels) went: its consumers go, their groups take back what
/// they held.
void release(self_ptr self, const caf::actor_addr& conn, std::optional<uint16_t> channel);
void add_credit(self_ptr self, const caf::actor& conn, uint16_t channel, const std::string& tag,
                uint32_t n);
void settle(self_ptr self, const caf::actor& conn, const std::vector<uint64_t>& ids,
            settle_kind kind);
/// Sends what consumers with credit may read.
void dispatch(self_ptr self);
/// Retention moved the head: cursors behind it move up.
void skip_to_head(stream_state& st);

/// Stores `offset` as `group`'s committed offset (creating the group), then done(error).
void commit(self_ptr self, const std::string& group, int64_t offset,
            std::function<void(const caf::error&)> done);
/// Commits what groups are done with: those with stream_commit_acks acks since their last
/// commit, or (with `timer`) any with acks older than stream_commit_interval_ms.
void auto_commit(self_ptr self, bool timer);
std::vector<group_info> groups_of(const stream_state& st);
std::vector<consumer_info> consumers_of(const stream_state& st);

}  // namespace warren::stream_parts
