// The cluster actor's part in changes through the metadata log (issue 33): any member takes a
// change, and the leader's log commits it.
//
// A change made on this node goes to this node's log. When another member leads, the log says
// which, and the change is forwarded to that member's cluster actor, which submits it to its own
// log and answers with the entry's index (or, should it have lost the lead meanwhile, the next
// leader's name, a few times at most). The change is answered here only once this node's log has
// applied the entry, so that whoever made it reads it back here.
//
// Answers from this node's log arrive with the relay's token, as its frames do.
#include "actors/cluster/cluster_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <caf/send.hpp>

#include <chrono>

namespace warren::cluster_parts {

namespace {

// How often a change follows a new leader before it is refused. Its first hop (from a follower
// to the leader it knows) is no change of leader; each later one is.
constexpr int max_leader_changes = 3;
// A leader answers within its log's quorum timeout; this only ends a wait on a leader that died.
constexpr auto leader_timeout = std::chrono::seconds(15);
// A change the log committed is answered as made once this node applied it, or after this long
// (this node cut off from the leader right after the commit): it is made, only not readable here
// yet.
constexpr auto apply_timeout = std::chrono::seconds(15);
const std::string applied_late = "\x01not applied here in time";
// Longer than any sync takes (its forwards and apply have their own limits), and as long as
// the node waits for one.
constexpr auto stuck_sync = std::chrono::minutes(2);

bool from_our_log(cluster_self self, uint64_t token) {
  const auto& sender = self->current_sender();
  if (sender && sender->node() != self->node()) return false;
  return token == self->state.config.raft->token();
}

// The leader a log's refusal names ("not the leader: the leader is NAME"), or "".
std::string leader_named_in(const std::string& error) {
  const std::string prefix =
      std::string(persistence::metadata_log::not_leader) + ": the leader is ";
  return error.compare(0, prefix.size(), prefix) == 0 ? error.substr(prefix.size()) : "";
}

caf::weak_actor_ptr weak_self(cluster_self self) {
  return caf::actor_cast<caf::weak_actor_ptr>(caf::actor_cast<caf::actor>(self));
}

void start_next_sync(cluster_self self);

void finish(cluster_self self, uint64_t id, const std::string& error) {
  auto& st = self->state;
  auto p = st.proposals.find(id);
  if (p == st.proposals.end()) return;
  if (p->second.from_member) {
    p->second.member.deliver(error, uint64_t{0});
  } else {
    p->second.local.deliver(error);
    for (auto& other : p->second.sharing) other.deliver(error);
  }
  st.proposals.erase(p);
  if (id != st.sync_under_way) return;
  st.sync_under_way = 0;
  start_next_sync(self);
}

void forward(cluster_self self, uint64_t id, const std::string& leader);

// A running member that holds a log with a configuration, when this node's log has none yet (it
// joined the cluster and waits for the leader to add it): "" otherwise.
std::string member_with_a_log(cluster_self self) {
  auto view = self->state.config.raft->latest();
  if (view && (!view->voters.empty() || !view->others.empty())) return {};
  for (const auto& [name, m] : self->state.members)
    if (m.handle && m.has_log) return name;
  return {};
}

// Hands proposal `id` to this node's log; its answer comes back as proposed_atom. A log that is
// not in the cluster's configuration yet knows no leader: the change goes to a member's.
void submit_here(cluster_self self, uint64_t id) {
  if (!self->state.proposals.at(id).from_member)
    if (auto member = member_with_a_log(self); !member.empty()) return forward(self, id, member);
  auto& p = self->state.proposals.at(id);
  persistence::metadata_entry entry;
  try {
    entry = persistence::decode_metadata_entry(p.entry);
  } catch (const std::exception& e) {
    return finish(self, id, e.what());
  }
  auto token = self->state.config.raft->token();
  self->state.config.raft->submit(std::move(entry), [cluster = weak_self(self), token, id](
                                                        const std::string& error, uint64_t index) {
    if (auto to = caf::actor_cast<caf::actor>(cluster.lock()))
      caf::anon_send(cluster_handle(to), proposed_atom::value, token, id, error, index);
  });
}

void wait_until_applied(cluster_self self, uint64_t id, uint64_t index) {
  auto token = self->state.config.raft->token();
  self->delayed_send(self, apply_timeout, applied_atom::value, token, id, applied_late);
  self->state.config.raft->after_applied(
      index, [cluster = weak_self(self), token, id](const std::string& error) {
        if (auto to = caf::actor_cast<caf::actor>(cluster.lock()))
          caf::anon_send(cluster_handle(to), applied_atom::value, token, id, error);
      });
}

// What came of a proposal made here, from this node's log or from the leader it went to.
void answered(cluster_self self, uint64_t id, const std::string& error, uint64_t index) {
  if (error.empty()) return wait_until_applied(self, id, index);
  if (persistence::metadata_log::failed_condition(error) && index != 0) {
    self->state.proposals.at(id).refusal = error;
    return wait_until_applied(self, id, index);
  }
  auto leader = leader_named_in(error);
  if (leader.empty()) return finish(self, id, error);
  forward(self, id, leader);
}

void forward(cluster_self self, uint64_t id, const std::string& leader) {
  auto& st = self->state;
  auto& p = st.proposals.at(id);
  if (++p.forwards > max_leader_changes + 1)
    return finish(self, id,
                  "no quorum: the metadata log's leader changed " +
                      std::to_string(max_leader_changes) +
                      " times while the change was under way; try again");
  if (leader == st.config.self.name) return submit_here(self, id);
  auto m = st.members.find(leader);
  if (m == st.members.end() || !m->second.handle)
    return finish(self, id,
                  "no quorum: the metadata log's leader " + leader + " is not reachable from " +
                      st.config.self.name);
  self->request(cluster_handle(m->second.handle), leader_timeout, propose_atom::value,
                st.config.self.name, p.entry)
      .then([=](std::string& error, uint64_t index) { answered(self, id, error, index); },
            [=](caf::error& err) {
              finish(self, id,
                     "outcome unknown: the metadata log's leader " + leader + " did not answer (" +
                         to_string(describe(err)) + "); the change may still be applied");
            });
}

// A change proposed on this node.
caf::result<std::string> start_here(cluster_self self, std::string entry) {
  auto& st = self->state;
  auto id = st.next_proposal++;
  auto& p = st.proposals[id];
  p.entry = std::move(entry);
  p.local = self->make_response_promise<std::string>();
  auto promise = p.local;
  submit_here(self, id);
  return promise;
}

// An empty entry that only this node's apply answers, for every sync asked so far.
void start_next_sync(cluster_self self) {
  auto& st = self->state;
  if (st.next_sync.empty()) return;
  auto id = st.next_proposal++;
  auto& p = st.proposals[id];
  p.entry = persistence::encode_metadata_entry({});
  p.sync = true;
  p.local = st.next_sync.front();
  p.sharing.assign(st.next_sync.begin() + 1, st.next_sync.end());
  st.next_sync.clear();
  st.sync_under_way = id;
  st.sync_started = std::chrono::steady_clock::now();
  submit_here(self, id);
}

}  // namespace

caf::result<std::string> propose_here(cluster_self self, std::string entry) {
  return start_here(self, std::move(entry));
}

// A sync is an entry in the log, so each costs a commit on every member: they go one at a time,
// and those asked while one is under way share the next. That one starts after they asked, so
// each still reads all that was committed before it asked; and lookups of names nobody declared
// (a publish to a missing exchange, over and over) cost the log one entry per round trip at
// most, however many clients make them.
caf::result<std::string> sync_here(cluster_self self) {
  auto& st = self->state;
  auto asker = self->make_response_promise<std::string>();
  st.next_sync.push_back(asker);
  // One whose answer was lost (its log replaced meanwhile) holds up no later one: its askers
  // have given up by then.
  if (std::chrono::steady_clock::now() - st.sync_started > stuck_sync) st.sync_under_way = 0;
  if (st.sync_under_way == 0) start_next_sync(self);
  return asker;
}

caf::result<std::string, uint64_t> propose_for_member(cluster_self self, std::string entry) {
  auto& st = self->state;
  auto id = st.next_proposal++;
  auto& p = st.proposals[id];
  p.entry = std::move(entry);
  p.from_member = true;
  p.member = self->make_response_promise<std::string, uint64_t>();
  auto promise = p.member;
  submit_here(self, id);
  return promise;
}

void proposal_answered(cluster_self self, uint64_t token, uint64_t id, const std::string& error,
                       uint64_t index) {
  if (!from_our_log(self, token)) return;
  auto p = self->state.proposals.find(id);
  if (p == self->state.proposals.end()) return;
  if (p->second.from_member) {  // the member that forwarded it waits for its own apply
    p->second.member.deliver(error, index);
    self->state.proposals.erase(p);
    return;
  }
  answered(self, id, error, index);
}

void proposal_applied(cluster_self self, uint64_t token, uint64_t id, const std::string& error) {
  if (!from_our_log(self, token)) return;
  auto p = self->state.proposals.find(id);
  if (p == self->state.proposals.end()) return;  // applied in time
  auto refusal = p->second.refusal;
  if (error != applied_late) return finish(self, id, error.empty() ? refusal : error);
  if (p->second.sync)
    return finish(self, id,
                  "this node has not applied the metadata log's latest entries within " +
                      std::to_string(apply_timeout.count()) + " s; its reads lag the leader's");
  if (!refusal.empty())
    return finish(self, id, refusal + persistence::metadata_log::not_applied_here);
  note(log_level::warn, "a change the metadata log committed was not applied on this node within " +
                            std::to_string(apply_timeout.count()) + " s; answered as made");
  finish(self, id, "");
}

}  // namespace warren::cluster_parts
