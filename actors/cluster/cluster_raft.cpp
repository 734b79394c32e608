// The cluster actor's part in the metadata log: carrying raft's frames between this node's log
// and the members' (the relay's token on the way out; on the way in, the sending node names
// the member, never the frame), and keeping the log's voters equal to the members.
#include "actors/cluster/cluster_parts.hpp"

#include <algorithm>
#include <map>

namespace warren::cluster_parts {

namespace {

using persistence::raft_frame;
using persistence::raft_id_of;

// Ticks (seconds) a configured node must stay unknown before the leader removes it.
constexpr int stranger_ticks = 10;

// The running member whose node sent the message being handled; "" when none.
std::string sending_member(cluster_self self) {
  const auto& sender = self->current_sender();
  if (!sender) return {};
  for (const auto& [name, m] : self->state.members)
    if (m.handle && m.handle.node() == sender->node()) return name;
  return {};
}

bool in(const std::vector<persistence::metadata_log::member>& list, const std::string& name) {
  return std::any_of(list.begin(), list.end(), [&](const auto& m) { return m.address == name; });
}

}  // namespace

void raft_frame_out(cluster_self self, uint64_t token, const std::string& to, raft_frame& frame) {
  auto& st = self->state;
  if (self->current_sender() && self->current_sender()->node() != self->node()) return;
  if (token != st.config.raft->token()) return;
  auto m = st.members.find(to);
  if (m == st.members.end() || !m->second.handle) return;  // raft finds the stream dead
  self->send(cluster_handle(m->second.handle), raft_atom::value, std::move(frame));
}

void raft_frame_in(cluster_self self, raft_frame& frame) {
  auto from = sending_member(self);
  if (from.empty()) {
    note(log_level::warn, "dropped a metadata log frame from a node that is not a member");
    return;
  }
  frame.from = from;
  frame.from_id = raft_id_of(from);
  self->state.config.raft->receive(std::move(frame));
}

void raft_tick(cluster_self self) {
  auto& st = self->state;
  auto& relay = *st.config.raft;
  auto view = relay.latest();
  if (!view) return;
  if (view->leader_address != st.raft_leader) {
    st.raft_leader = view->leader_address;
    auto term = " (term " + std::to_string(view->term) + ")";
    if (st.raft_leader.empty())
      note(log_level::warn, "metadata log: no leader heard from" + term);
    else
      note(log_level::info, "metadata log: the leader is " + st.raft_leader + term);
  }
  if (!view->leading) return;
  auto report = [](bool add, const std::string& name) {
    return [=](const std::string& error) {
      if (error.empty())
        note(log_level::info, std::string(add ? "node " : "forgotten node ") + name +
                                  (add ? " votes in the metadata log"
                                       : " no longer votes in the "
                                         "metadata log"));
      else
        note(log_level::warn, std::string(add ? "adding " : "removing ") + name +
                                  (add ? " to" : " from") + " the metadata log: " + error);
    };
  };
  // One addition a tick, taking turns, so that a member that cannot be added (it never
  // catches up) does not hold back the others.
  std::vector<std::string> wanting;
  for (const auto& [name, m] : st.members)
    if (m.handle && !in(view->voters, name)) wanting.push_back(name);
  if (!wanting.empty()) {
    auto next = std::upper_bound(wanting.begin(), wanting.end(), st.raft_last_added);
    const auto& name = next == wanting.end() ? wanting.front() : *next;
    st.raft_last_added = name;
    relay.change_voters(true, {raft_id_of(name), name}, report(true, name));
    return;
  }
  // A configured node that is no member was forgotten. It is removed only once it has stayed
  // unknown for a while: a node added by the previous leader may not have met this one yet.
  std::vector<persistence::metadata_log::member> configured = view->voters;
  configured.insert(configured.end(), view->others.begin(), view->others.end());
  std::map<std::string, int> strangers;
  for (const auto& c : configured) {
    if (c.address == st.config.self.name || st.members.count(c.address) != 0) continue;
    int ticks = strangers[c.address] = st.raft_strangers[c.address] + 1;
    if (ticks >= stranger_ticks) {
      relay.change_voters(false, c, report(false, c.address));
      strangers.erase(c.address);
      break;
    }
  }
  st.raft_strangers = std::move(strangers);
}

void raft_fill_rows(cluster_self self, std::vector<node_info>& rows) {
  auto& st = self->state;
  auto view = st.config.raft->latest();
  for (auto& row : rows) {
    if (row.local) {
      row.has_log = view.has_value();
      if (view) row.log_applied = view->applied;
    } else if (auto m = st.members.find(row.name); m != st.members.end()) {
      row.has_log = m->second.has_log;
    }
    if (!view) continue;
    row.voter = in(view->voters, row.name);
    row.leader = view->leader_address == row.name;
    if (row.voter || row.leader) row.has_log = true;
  }
}

}  // namespace warren::cluster_parts
