// What the queue actor shows of itself without changing anything: its figures, its consumers,
// one message looked up by id, and ready messages peeked in delivery order.
#include "actors/queue/queue_views.hpp"

#include "actors/queue/queue_paging.hpp"

#include <algorithm>

namespace warren::queue_views {

queue_info info_of(const queue_state& st) {
  auto info = core_info(st, st.consumers.size());
  info.ready = ready_count(st);
  info.paged_out = st.paged.count;
  info.unacked = st.pending.size();
  return info;
}

std::vector<consumer_info> consumers_of(const queue_state& st) {
  std::vector<consumer_info> out;
  for (const auto& c : st.consumers.all())
    out.push_back({st.vhost, st.spec.name, c.spec.tag, c.spec.channel, c.spec.connection_name,
                   c.spec.no_ack, c.spec.exclusive, c.spec.prefetch, c.unacked});
  return out;
}

lookup_reply lookup(queue_state& st, const message_id& id) {
  lookup_reply reply;
  st.ready.for_each([&](const auto& e) {
    if (!reply.found && e.msg->id == id)
      reply = {true, st.spec.name, "ready", {0, e.msg, e.redelivered != 0}};
  });
  if (reply.found) return reply;
  if (auto held = st.pending.find_message(id))
    return {true, st.spec.name, "unacked", {held->first, held->second->msg, true}};
  if (auto paged = find_paged(st, id))
    return {true, st.spec.name, "ready", {0, std::move(paged->msg), paged->delivered}};
  return reply;
}

// Ready messages in delivery order from position `from`, left where they are: the head from
// memory, the paged-out tail from disk.
std::vector<queued_delivery> peek(queue_state& st, uint64_t from, uint32_t count) {
  std::vector<queued_delivery> out;
  uint64_t position = 0;
  st.ready.for_each([&](const ready_list::entry& e) {
    if (position >= from && out.size() < count)
      out.push_back({position, e.msg, e.redelivered != 0, -1});
    ++position;
  });
  if (out.size() < count) {
    uint64_t skip = from > position ? from - position : 0;
    position = std::max(position, from);
    for (auto& m : peek_paged(st, skip, count - out.size()))
      out.push_back({position++, std::move(m.msg), m.delivered, -1});
  }
  return out;
}

}  // namespace warren::queue_views
