#include "actors/stream/stream_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/behavior_parts.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/stream/stream_parts.hpp"

#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"

#include <chrono>

namespace warren {

namespace {

using namespace stream_parts;

caf::error not_for_streams(const stream_state& st, const std::string& what) {
  return make_broker_error(reply_code::precondition_failed,
                           what + " is not supported on " + st.describe() +
                               ": a stream keeps its messages; consume it from an offset");
}

queue_info info_of(const stream_state& st) {
  auto info = core_info(st, st.consumers.size());
  info.ready = message_count(st);
  info.unacked = st.held.size();
  if (info.ready > 0) {
    info.first_offset = static_cast<int64_t>(first_offset(st));
    info.last_offset = static_cast<int64_t>(st.next_offset) - 1;
  }
  info.groups = groups_of(st);
  // Segments holding messages: retention may leave an empty one being appended to.
  if (st.store) info.segments = static_cast<uint32_t>(st.store->extents().size());
  return info;
}

// Groups that have not read the whole stream: what a delete without force refuses over.
std::string lagging_groups(const stream_state& st) {
  std::string out;
  for (const auto& g : groups_of(st))
    if (g.lag > 0)
      out += (out.empty() ? "" : ", ") + quote(g.group) + " (lag " + std::to_string(g.lag) + ")";
  return out;
}

void drop_group_records(self_ptr self) {
  auto& st = self->state;
  std::vector<persistence::meta_mutation> batch;
  for (const auto& [name, g] : st.groups)
    batch.push_back({persistence::meta_table::streams,
                     persistence::stream_offset_key(st.queue_id, name),
                     {},
                     true});
  persist(self, st.storage.persistence, std::move(batch), [](const caf::error&) {});
}

caf::result<uint32_t> delete_stream(self_ptr self, bool if_unused, bool if_empty, bool force) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  auto count = message_count(st);
  if (auto refused =
          delete_precondition(st, st.consumers.size(), count, if_unused, if_empty, "message(s)"))
    return refused;
  if (auto lagging = lagging_groups(st); !force && !lagging.empty())
    return make_broker_error(reply_code::precondition_failed,
                             st.describe() +
                                 " has consumer groups that have not reached its end: " + lagging +
                                 "; delete it with force to drop them");
  drop_group_records(self);
  finish_delete(self, st.consumers);
  return static_cast<uint32_t>(std::min<uint64_t>(count, UINT32_MAX));
}

// By Warren's message id: the tail in memory, then the whole log from its head.
lookup_reply lookup(stream_state& st, const message_id& id) {
  uint64_t from = first_offset(st);
  while (from < st.durable_end) {
    auto run = read(st, from, 4096, 4 << 20);
    for (auto& m : run.messages)
      if (m.msg->id == id)
        return {true, st.spec.name, "ready", {0, m.msg, false, static_cast<int64_t>(m.offset)}};
    if (run.next <= from) break;
    from = run.next;
  }
  return {};
}

// Messages of the log from position `from` (counted from the oldest kept), as a classic queue's
// peek counts its ready messages; each carries its offset.
std::vector<queued_delivery> peek(stream_state& st, uint64_t from, uint32_t count) {
  std::vector<queued_delivery> out;
  auto first = first_offset(st);
  if (from > st.durable_end - first) return out;
  auto run = read(st, first + from, count, 4 << 20);
  uint64_t position = from;
  for (auto& m : run.messages)
    out.push_back({position++, m.msg, false, static_cast<int64_t>(m.offset)});
  return out;
}

caf::result<stream_reply> commit_command(self_ptr self, const stream_command& cmd) {
  auto& st = self->state;
  if (auto problem = check_name("consumer group name", cmd.group);
      !problem.empty() || cmd.group.empty())
    return make_broker_error(reply_code::precondition_failed,
                             cmd.group.empty() ? "a commit needs a consumer group" : problem);
  auto last = static_cast<int64_t>(st.next_offset) - 1;
  if (cmd.offset < 0 || cmd.offset > last)
    return make_broker_error(reply_code::precondition_failed,
                             "offset " + std::to_string(cmd.offset) + " is not in " +
                                 st.describe() + " (its last offset is " + std::to_string(last) +
                                 ")");
  auto rp = self->make_response_promise<stream_reply>();
  auto group = cmd.group;
  commit(self, group, cmd.offset, [=](const caf::error& err) mutable {
    if (err) {
      rp.deliver(err);
      return;
    }
    stream_reply reply;
    for (auto& g : groups_of(self->state))
      if (g.group == group) reply.groups.push_back(g);
    rp.deliver(std::move(reply));
  });
  return rp;
}

caf::result<stream_reply> on_command(self_ptr self, const stream_command& cmd) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  stream_reply reply;
  switch (cmd.op) {
    case stream_command::commit:
      return commit_command(self, cmd);
    case stream_command::groups:
      if (st.commits_in_flight > 0) {
        st.waiting_listings.push_back(self->make_response_promise<stream_reply>());
        return st.waiting_listings.back();
      }
      reply.groups = groups_of(st);
      break;
    case stream_command::read:
      if (cmd.offset >= 0) {
        auto run = read(st, static_cast<uint64_t>(cmd.offset), 1, 1);
        if (!run.messages.empty() && run.messages[0].offset == static_cast<uint64_t>(cmd.offset)) {
          reply.found = true;
          reply.delivery = {0, run.messages[0].msg, false, cmd.offset};
        }
      }
      break;
  }
  return reply;
}

// Once a second: retention by age, and commits of groups whose acks waited long enough.
void on_tick(self_ptr self) {
  apply_retention(self);
  auto_commit(self, true);
  dispatch(self);
  self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
}

void open(self_ptr self) {
  auto& st = self->state;
  st.memory = memory_share(st.storage.memory);
  if (st.storage.data_dir.empty()) {
    st.unavailable = "this node has no data directory for its files";
    return;
  }
  auto opts = st.storage.segments;
  opts.keep_transient = true;  // a stream keeps every message, whatever its delivery mode
  if (st.limits.stream_segment_bytes)
    opts.segment_bytes = static_cast<uint64_t>(*st.limits.stream_segment_bytes);
  st.store = std::make_unique<persistence::segment_store>(
      st.storage.queue_dir(st.queue_id), quote(st.spec.name) + " (vhost " + quote(st.vhost) + ")",
      opts, st.storage.files);
  recover(self);
  report_memory(st);
}

// Streams keep what their consumers read: a cancel has nothing to requeue.
void cancel_keeping_reads(self_ptr self, const caf::actor& conn, uint16_t channel,
                          const std::string& tag, bool) {
  cancel_consumer(self, conn, channel, tag);
}

caf::result<get_reply> refuse_get(self_ptr self, const caf::actor&, uint16_t, bool) {
  return not_for_streams(self->state, "basic.get");
}

queue_control_api::behavior_type control_behavior(self_ptr self) {
  return {
      [=](enqueue_atom, publish_batch& batch) {
        if (!self->state.unavailable.empty()) return send_confirms(self, refusal_of(batch));
        append(self, batch);
      },
      [=](purge_atom) -> caf::result<uint32_t> {
        return not_for_streams(self->state, "purge (retention removes old segments)");
      },
      [=](delete_atom, bool if_unused, bool if_empty, bool force) {
        return delete_stream(self, if_unused, if_empty, force);
      },
      [=](declare_atom) { return info_of(self->state); },
      [=](stats_atom) { return info_of(self->state); },
      [=](consumers_atom) { return consumers_of(self->state); },
      [=](lookup_atom, const message_id& id) { return lookup(self->state, id); },
      [=](peek_atom, uint64_t from, uint32_t count) { return peek(self->state, from, count); },
      [=](tick_atom) { on_tick(self); },
      [=](sync_atom) { on_sync(self); },
      [=](compact_atom) {},
  };
}

stream_own_api::behavior_type own_behavior(self_ptr self) {
  return {
      [=](stream_atom, const stream_command& cmd) { return on_command(self, cmd); },
      [=](flushed_atom) { dispatch(self); },
  };
}

}  // namespace

stream_actor_type::behavior_type stream_actor(
    stream_actor_type::stateful_pointer<stream_state> self, std::string vhost, queue_spec spec,
    queue_limits limits, caf::actor vhost_actor, uint64_t queue_id, storage_context storage,
    std::map<std::string, int64_t> committed) {
  install_actor_defaults(self, "stream");
  auto& st = self->state;
  st.vhost = std::move(vhost);
  st.spec = std::move(spec);
  st.limits = std::move(limits);
  st.vhost_actor = std::move(vhost_actor);
  st.stream = true;
  st.queue_id = queue_id;
  st.storage = std::move(storage);
  for (const auto& [group, offset] : committed) st.groups.emplace(group, stream_group(offset));
  open(self);
  self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
  // A last batch goes out before the node stops.
  install_queue_handlers(self, on_sync, [](self_ptr self, const caf::actor_addr& conn) {
    release(self, conn, std::nullopt);
  });
  return join_parts<stream_actor_type, queue_consumer_api, queue_control_api, stream_own_api>(
      consumer_behavior<self_ptr>(
          self, {add_consumer, cancel_keeping_reads, add_credit, settle, release, refuse_get}),
      control_behavior(self), own_behavior(self));
}

}  // namespace warren
