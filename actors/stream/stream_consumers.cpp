// A stream's consumers and consumer groups: attaching at an offset, credit, acks, commits.
#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/stream/stream_parts.hpp"

#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"

#include <algorithm>
#include <unordered_map>

namespace warren::stream_parts {

namespace {

// Bodies one dispatch reads at most before it lets other messages in (it goes on right after).
constexpr uint64_t dispatch_bytes = 4 << 20;
constexpr uint64_t read_bytes = 1 << 20;

using out_map = std::unordered_map<uint64_t, std::vector<queued_delivery>>;  // by consumer key

stream_state::consumer* find(stream_state& st, uint64_t key) {
  for (auto& c : st.consumers)
    if (c.key == key) return &c;
  return nullptr;
}

void hand_out(stream_state& st, stream_state::consumer& c, const stream_state::cached& m,
              bool redelivered, out_map& out) {
  auto id = ++st.next_delivery_id;
  st.held[id] = {m.offset, c.key, c.spec.connection, c.spec.channel};
  --c.credit;
  ++c.unacked;
  st.traffic.count_out(m.msg->body.size(), redelivered);
  out[c.key].push_back({id, m.msg, redelivered, static_cast<int64_t>(m.offset)});
}

// A consumer without a group reads on from its own cursor.
uint64_t serve_alone(stream_state& st, stream_state::consumer& c, out_map& out) {
  uint64_t bytes = 0;
  c.cursor = std::max(c.cursor, first_offset(st));
  while (c.credit > 0 && c.cursor < st.durable_end && bytes < dispatch_bytes) {
    auto run = read(st, c.cursor, c.credit, read_bytes);
    for (const auto& m : run.messages) {
      hand_out(st, c, m, false, out);
      bytes += m.msg->body.size();
    }
    if (run.next <= c.cursor) break;
    c.cursor = run.next;
  }
  return bytes;
}

// The group's next member with credit, in turn.
stream_state::consumer* next_member(stream_state& st, stream_group& g) {
  auto& members = g.members();
  for (size_t i = 0; i < members.size(); ++i) {
    auto& turn = g.turn();
    turn = (turn + 1) % members.size();
    auto* c = find(st, members[turn]);
    if (c != nullptr && c->credit > 0) return c;
  }
  return nullptr;
}

uint32_t group_credit(stream_state& st, const stream_group& g) {
  uint32_t credit = 0;
  for (auto key : g.members())
    if (auto* c = find(st, key)) credit += c->credit;
  return credit;
}

// A group's messages go to its members in turn: redeliveries first, then from its cursor.
uint64_t serve_group(stream_state& st, stream_group& g, out_map& out) {
  uint64_t bytes = 0;
  g.skip_to(first_offset(st));
  while (bytes < dispatch_bytes) {
    auto credit = group_credit(st, g);
    uint64_t offset = 0;
    bool again = false;
    if (credit == 0 || !g.next(st.durable_end, offset, again)) break;
    auto run = read(st, offset, again ? 1 : credit, read_bytes);
    if (again && (run.messages.empty() || run.messages[0].offset != offset)) {
      g.forget(offset);  // no longer in the log (damage): nothing to hand out again
      continue;
    }
    if (run.messages.empty()) {
      if (run.next <= offset) break;
      g.move_cursor(run.next);  // records lost to damage are passed over
      continue;
    }
    for (const auto& m : run.messages) {
      auto* c = next_member(st, g);
      if (c == nullptr) break;
      g.handed_out(m.offset, again);
      hand_out(st, *c, m, again, out);
      bytes += m.msg->body.size();
    }
  }
  return bytes;
}

void schedule_dispatch(self_ptr self) {
  auto& st = self->state;
  if (st.dispatch_scheduled) return;
  st.dispatch_scheduled = true;
  self->send(self, flushed_atom::value);
}

caf::error refuse(const stream_state& st, const std::string& why) {
  return make_broker_error(reply_code::precondition_failed,
                           "cannot consume from " + st.describe() + ": " + why);
}

// A consumer's first message: its own cursor, or (the first of its group) the group's.
void place(stream_state& st, stream_state::consumer& c) {
  if (c.spec.group.empty()) {
    c.cursor = resolve(st, c.spec.offset);
    return;
  }
  auto& g = st.groups.try_emplace(c.spec.group).first->second;
  if (g.members().empty())
    g.position(c.spec.offset.kind == stream_offset_spec::unset ? g.resume_at(st.next_offset)
                                                               : resolve(st, c.spec.offset));
  g.members().push_back(c.key);
}

// What a leaving consumer held goes back to its group; a group left without members commits
// what it is done with, so that its next consumer resumes there.
void leave(self_ptr self, const stream_state::consumer& c) {
  auto& st = self->state;
  auto g = c.spec.group.empty() ? st.groups.end() : st.groups.find(c.spec.group);
  for (auto i = st.held.begin(); i != st.held.end();) {
    if (i->second.consumer != c.key) {
      ++i;
      continue;
    }
    if (g != st.groups.end()) g->second.give_back(i->second.offset);
    i = st.held.erase(i);
  }
  if (g == st.groups.end()) return;
  auto& members = g->second.members();
  members.erase(std::remove(members.begin(), members.end(), c.key), members.end());
  auto done = g->second.done_through();
  if (members.empty() && done > g->second.committed())
    commit(self, g->first, done, [](const caf::error&) {});
}

void send_batches(self_ptr self, out_map& out) {
  auto& st = self->state;
  for (auto& [key, deliveries] : out) {
    auto* c = find(st, key);
    if (c == nullptr || deliveries.empty()) continue;
    self->send(caf::actor_cast<connection_broker_api>(c->spec.connection), deliver_atom::value,
               c->spec.channel, c->spec.tag, false, std::move(deliveries));
  }
}

}  // namespace

caf::result<void> add_consumer(self_ptr self, consumer_spec& spec) {
  auto& st = self->state;
  if (!st.unavailable.empty()) return unavailable_error(st);
  if (spec.no_ack) return refuse(st, "a stream consumer must acknowledge (no automatic acks)");
  if (spec.prefetch == 0)
    return refuse(st,
                  "a stream consumer needs a prefetch count (basic.qos, or prefetch at consume)");
  for (const auto& c : st.consumers)
    if (c.spec.exclusive || spec.exclusive)
      return make_broker_error(reply_code::access_refused,
                               st.describe() + " has an exclusive consumer, or other consumers");
  watch(self, spec.connection);
  stream_state::consumer c;
  c.key = ++st.next_consumer_key;
  c.credit = spec.initial_credit;
  c.spec = std::move(spec);
  place(st, c);
  st.consumers.push_back(std::move(c));
  // Answer first, then deliver: the connection learns of the consumer before its first delivery.
  auto rp = self->make_response_promise<void>();
  deliver_unit(rp);
  dispatch(self);
  return rp;
}

void cancel_consumer(self_ptr self, const caf::actor& conn, uint16_t channel,
                     const std::string& tag) {
  auto& st = self->state;
  auto i = std::find_if(st.consumers.begin(), st.consumers.end(), [&](const auto& c) {
    return c.spec.connection == conn && c.spec.channel == channel && c.spec.tag == tag;
  });
  if (i == st.consumers.end()) return;
  auto gone = std::move(*i);
  st.consumers.erase(i);
  leave(self, gone);
  dispatch(self);
}

void release(self_ptr self, const caf::actor_addr& conn, std::optional<uint16_t> channel) {
  auto& st = self->state;
  std::vector<stream_state::consumer> gone;
  for (auto i = st.consumers.begin(); i != st.consumers.end();) {
    if (i->spec.connection.address() == conn && (!channel || *channel == i->spec.channel)) {
      gone.push_back(std::move(*i));
      i = st.consumers.erase(i);
    } else {
      ++i;
    }
  }
  for (const auto& c : gone) leave(self, c);
  if (!gone.empty()) dispatch(self);
}

void add_credit(self_ptr self, const caf::actor& conn, uint16_t channel, const std::string& tag,
                uint32_t n) {
  for (auto& c : self->state.consumers)
    if (c.spec.connection == conn && c.spec.channel == channel && c.spec.tag == tag) {
      c.credit += n;
      dispatch(self);
      return;
    }
}

void settle(self_ptr self, const caf::actor& conn, const std::vector<uint64_t>& ids,
            settle_kind kind) {
  auto& st = self->state;
  for (auto id : ids) {
    auto i = st.held.find(id);
    if (i == st.held.end() || !(i->second.connection == conn)) continue;
    auto held = i->second;
    st.held.erase(i);
    auto* c = find(st, held.consumer);
    if (c == nullptr) continue;
    if (c->unacked > 0) --c->unacked;
    if (kind == settle_kind::ack) ++st.traffic.acked;
    if (c->spec.group.empty()) continue;  // a lone consumer's acks only return credit
    auto& g = st.groups[c->spec.group];
    if (kind == settle_kind::requeue) {
      g.give_back(held.offset);
    } else if (g.settled(held.offset)) {
      ++g.acks_since_commit;
    }
  }
  auto_commit(self, false);
  dispatch(self);
}

void dispatch(self_ptr self) {
  auto& st = self->state;
  st.dispatch_scheduled = false;
  if (st.consumers.empty() || !st.unavailable.empty()) return;
  out_map out;
  uint64_t bytes = 0;
  for (auto& c : st.consumers)
    if (c.spec.group.empty() && c.credit > 0) bytes += serve_alone(st, c, out);
  for (auto& [name, g] : st.groups)
    if (!g.members().empty()) bytes += serve_group(st, g, out);
  send_batches(self, out);
  if (bytes >= dispatch_bytes) schedule_dispatch(self);
  report_memory(st);
}

void skip_to_head(stream_state& st) {
  auto first = first_offset(st);
  for (auto& c : st.consumers) c.cursor = std::max(c.cursor, first);
  for (auto& [name, g] : st.groups) g.skip_to(first);
}

void commit(self_ptr self, const std::string& group, int64_t offset,
            std::function<void(const caf::error&)> done) {
  auto& st = self->state;
  auto& g = st.groups.try_emplace(group).first->second;
  g.set_committed(offset);
  g.acks_since_commit = 0;
  g.last_commit_ms = wall_ms();
  ++st.commits_in_flight;
  persistence::stored_stream_offset record{st.queue_id, group, offset, g.last_commit_ms};
  std::vector<persistence::meta_mutation> batch{{persistence::meta_table::streams,
                                                 persistence::stream_offset_key(st.queue_id, group),
                                                 persistence::encode_stream_offset(record), false}};
  auto what = "group " + quote(group) + " of " + st.describe();
  // Listings show the offset once it is stored: what they say survives a crash.
  persist(self, st.storage.persistence, std::move(batch), [=](const caf::error& err) {
    auto& st = self->state;
    if (err)
      log(log_level::error, "stream", "could not store the offset of " + what);
    else
      st.groups[group].set_stored(offset);
    if (--st.commits_in_flight == 0) {
      for (auto& rp : st.waiting_listings) rp.deliver(stream_reply{groups_of(st), false, {}});
      st.waiting_listings.clear();
    }
    done(err);
  });
}

void auto_commit(self_ptr self, bool timer) {
  auto& st = self->state;
  auto now = wall_ms();
  for (auto& [name, g] : st.groups) {
    if (g.acks_since_commit == 0) continue;
    bool due = g.acks_since_commit >= st.storage.stream_commit_acks ||
               (timer && now - g.last_commit_ms >= st.storage.stream_commit_interval_ms);
    auto done = g.done_through();
    if (due && done > g.committed()) commit(self, name, done, [](const caf::error&) {});
  }
}

std::vector<group_info> groups_of(const stream_state& st) {
  std::vector<group_info> out;
  auto first = first_offset(st);
  for (const auto& [name, g] : st.groups) {
    auto from = std::max(static_cast<uint64_t>(g.stored() + 1), first);
    out.push_back({name, g.stored(), st.next_offset - std::min(from, st.next_offset),
                   static_cast<uint32_t>(g.members().size())});
  }
  return out;
}

std::vector<consumer_info> consumers_of(const stream_state& st) {
  std::vector<consumer_info> out;
  for (const auto& c : st.consumers)
    out.push_back({st.vhost, st.spec.name, c.spec.tag, c.spec.channel, c.spec.connection_name,
                   false, c.spec.exclusive, c.spec.prefetch, c.unacked});
  return out;
}

}  // namespace warren::stream_parts
