// Durable queues when the cluster keeps metadata in its log (issue 33).
//
// A durable, non-exclusive queue's name is taken cluster-wide by one log entry: its record in
// table queue_homes (the declaration and its home node), proposed on condition that the vhost
// is there and the name is not. Two members declaring one name at once, or either side of a
// split, so end with one queue: the first entry committed wins, the other is refused (the
// loser then declares the winner's queue where it lives), and a member without a majority
// refuses with `no quorum`. Every member applies the record in log order and knows the name
// and its home from then on, also after a restart while the home is down (before, a member
// restarted then forgot the queue and could create a second one of its name).
//
// The home runs the queue as before: its own record (the queues table, with the id naming its
// message folder) is written by its vhost, and other members reach it through the placements
// the home announces (vhost_cluster.cpp). A delete is one entry erasing the record; the home
// deletes the queue when it applies it (the log's apply also erases the home's own record, in
// the same transaction, so a home that stops in between does not bring the queue back).
// Transient queues are no one's but their node's: they keep the claims of vhost_cluster.cpp.
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/queue_protocol.hpp"
#include "actors/vhost/equivalence.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log.hpp"

#include <algorithm>
#include <set>

namespace warren::vhost_parts {

using persistence::meta_table;
using persistence::metadata_log;

namespace {

persistence::meta_condition queue_home_there(const vhost_state& st, const std::string& name,
                                             bool present) {
  return {meta_table::queue_homes, persistence::queue_key(st.vhost, name), present};
}

// NOT_FOUND: queue `name` lives on node `home`, which this one does not reach (`why`, if said).
caf::error not_reached(const vhost_state& st, const std::string& name, const std::string& home,
                       const std::string& why = {}) {
  return make_broker_error(reply_code::not_found,
                           "queue " + quote(name) + in_vhost(st) + " lives on node " + home +
                               ", which is not reachable" + (why.empty() ? "" : " (" + why + ")"));
}

// Starts the log's queue `spec`, which names this node as its home, unless it runs already or a
// request of it here is still being decided (that one settles it). Its arguments were checked
// by the declare that proposed it: a record that fails the checks here came from another build,
// and is not run (a stream's files must never be served as a classic queue's).
void start_if_home(self_ptr self, const queue_spec& spec) {
  auto& st = self->state;
  if (spec.home != st.node_name || st.queues.count(spec.name) != 0 || claim_pending(st, spec.name))
    return;
  queue_limits limits;
  auto problem = parse_queue_arguments(spec.arguments, limits);
  if (problem.empty())
    problem = check_queue_kind(limits, spec.arguments, true, false, spec.auto_delete);
  if (!problem.empty()) {
    log(log_level::error, "vhost",
        "queue " + quote(spec.name) + in_vhost(st) +
            " of the metadata log is not started: " + problem);
    return;
  }
  create_queue(self, spec, limits, caf::actor{}, {});
}

// The declare of `spec` goes to the home the log names: through the cluster, which answers with
// the queue's placement too (taken here first, so that routes to it exist once we answer).
void declare_at_home(self_ptr self, queue_spec spec, const std::string& home,
                     caf::typed_response_promise<queue_info> rp) {
  auto& st = self->state;
  spec.home.clear();  // the log's home decides, not the asker's --node
  if (const auto* r = st.remote.find(spec.name); r != nullptr && r->home) {
    self->request(vhost_handle(r->home), member_timeout, declare_atom::value, spec, false,
                  caf::actor{})
        .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return;
  }
  if (!st.cluster) {
    rp.deliver(not_reached(st, spec.name, home));
    return;
  }
  self->request(cluster_handle(st.cluster), member_timeout, declare_atom::value, home, st.vhost,
                spec)
      .then(
          [=](queue_info& info, queue_placement& placed) mutable {
            remote_placed(self, placed);
            rp.deliver(std::move(info));
          },
          [=](caf::error& err) mutable {
            // The cluster's own refusal names the node ("node 'b' is down"): said of the queue.
            auto text = to_string(describe(err));
            if (text.find("node '" + home + "'") == std::string::npos) {
              rp.deliver(std::move(err));
              return;
            }
            rp.deliver(not_reached(self->state, spec.name, home, text));
          });
}

// A declare's entry was answered (`error`, empty when applied): what the log now holds of the
// name decides the answer, whatever the error, since an entry answered with an error may still
// have been committed.
void settle_declare(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                    const caf::actor& requester, caf::typed_response_promise<queue_info> rp,
                    const std::string& error) {
  auto& st = self->state;
  auto l = st.log_queues.find(spec.name);
  if (l == st.log_queues.end()) {
    auto failed = metadata_log::failed_condition(error);
    if (failed && *failed == 0)
      rp.deliver(
          make_broker_error(reply_code::not_found, "vhost " + quote(st.vhost) + " was deleted"));
    else if (error.empty() || failed)  // declared on a member and deleted since, or not applied
      rp.deliver(make_broker_error(reply_code::resource_error,
                                   "queue " + quote(spec.name) + in_vhost(st) +
                                       " was changed on another member meanwhile; " +
                                       "declare it again"));
    else
      rp.deliver(not_done("queue " + quote(spec.name) + in_vhost(st) + " not declared", error));
    return;
  }
  const auto theirs = l->second;
  bool here = theirs.home == st.node_name;
  if (auto m = queue_mismatch(st.vhost, theirs, spec); !m.empty()) {
    // An earlier declare of this node whose answer was lost put it: it runs all the same.
    if (here) start_if_home(self, theirs);
    rp.deliver(invalid(here ? m : m + " (it lives on node " + theirs.home + ")"));
    return;
  }
  if (!here) return declare_at_home(self, spec, theirs.home, rp);
  auto q = st.queues.find(spec.name);
  if (q == st.queues.end()) return create_queue(self, spec, limits, requester, rp);
  self->request(queue_handle(q->second.actor), caf::infinite, declare_atom::value)
      .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
}

// The name of queue `name` is held while its erase is under way: requests naming it (a declare,
// a delete, a consume, a bind) wait for the outcome instead of finding a queue about to go.
// Every path that holds a name first checks that none holds it (claim_pending), so a release
// only ever ends its own hold.
void hold_name(vhost_state& st, const std::string& name) {
  auto& held = st.claims[name];
  if (auto q = st.queues.find(name); q != st.queues.end()) held.spec = q->second.spec;
  held.committing = true;
}

void release_name(self_ptr self, const std::string& name) {
  auto c = self->state.claims.find(name);
  if (c == self->state.claims.end()) return;
  auto parked = std::move(c->second.parked);
  self->state.claims.erase(c);
  unpark(std::move(parked));
}

// Proposes a change of the log's records of `names` (`change` writes one name's), up to
// `per_entry` names to an entry, each with its condition (`present`: the record there or
// absent). An entry refused on one name's condition goes again name by name, so that the others
// still go in; `done` gets each entry's names and error ("" once applied, or when the record
// was already as wanted).
void propose_each(self_ptr self, const std::vector<std::string>& names, size_t per_entry,
                  bool present,
                  std::function<void(const std::string& name, vhost_records::changes&)> change,
                  std::function<void(const std::vector<std::string>&, const std::string&)> done) {
  auto& st = self->state;
  for (size_t first = 0; first < names.size(); first += per_entry) {
    std::vector<std::string> group(names.begin() + first,
                                   names.begin() + std::min(names.size(), first + per_entry));
    persistence::metadata_entry entry;
    entry.conditions = {vhost_there(st)};
    for (const auto& name : group) {
      change(name, entry.changes);
      entry.conditions.push_back(queue_home_there(st, name, present));
    }
    propose_to_log(self, entry, [=](const std::string& error) {
      auto failed = metadata_log::failed_condition(error);
      if (group.size() > 1 && failed && *failed != 0)
        return propose_each(self, group, 1, present, change, done);
      done(group, failed && *failed != 0 ? std::string() : error);
    });
  }
}

// This node's durable queues `names`, proposed as the log's with this node as their home; a
// name a member took first stays this node's own queue, and is logged.
void propose_own_queues(self_ptr self, const std::vector<std::string>& names) {
  constexpr size_t per_entry = 64;  // a node founding a cluster may hold thousands
  // Held meanwhile: a delete of one must not take the old way while its name goes in.
  for (const auto& name : names) hold_name(self->state, name);
  propose_each(
      self, names, per_entry, false,
      [self](const std::string& name, vhost_records::changes& out) {
        auto& st = self->state;
        auto q = st.queues.find(name);
        if (q == st.queues.end()) return;  // gone meanwhile (a group proposed again by name)
        queue_spec record = q->second.spec;
        record.home = st.node_name;
        vhost_records::put_queue_home(st.vhost, record, out);
      },
      [self](const std::vector<std::string>& group, const std::string& error) {
        auto& st = self->state;
        for (const auto& name : group) {
          release_name(self, name);
          auto l = st.log_queues.find(name);
          if (error.empty() && l != st.log_queues.end() && l->second.home == st.node_name) continue;
          auto why = !error.empty()             ? error
                     : l == st.log_queues.end() ? std::string("taken and released again meanwhile")
                                                : "node " + l->second.home + " took the name first";
          log(log_level::warn, "vhost",
              "queue " + quote(name) + in_vhost(st) + " of this node is not in the metadata log (" +
                  why + "); it stays this node's own");
        }
      });
}

// Proposes the erase of the log's record of queue `name`, its name held meanwhile; `done` gets
// the error ("" when the entry was applied, or found the record gone already).
void propose_queue_erase(self_ptr self, const std::string& name,
                         std::function<void(const std::string& error)> done) {
  hold_name(self->state, name);
  propose_each(
      self, {name}, 1, true,
      [self](const std::string& n, vhost_records::changes& out) {
        vhost_records::erase_queue_home(self->state.vhost, n, out);
      },
      [=](const std::vector<std::string>&, const std::string& error) {
        release_name(self, name);
        done(error);
      });
}

}  // namespace

bool queue_in_log(const vhost_state& st, const queue_spec& spec) {
  return exchanges_in_log(st) && vhost_records::stored(spec) && !st.node_name.empty();
}

bool home_of_log_queue(const vhost_state& st, const std::string& name) {
  auto l = st.log_queues.find(name);
  return exchanges_in_log(st) && l != st.log_queues.end() && l->second.home == st.node_name;
}

const queue_spec* log_queue_elsewhere(const vhost_state& st, const std::string& name) {
  auto l = st.log_queues.find(name);
  if (!exchanges_in_log(st) || l == st.log_queues.end() || l->second.home == st.node_name)
    return nullptr;
  return &l->second;
}

caf::error log_queue_not_reached(const vhost_state& st, const queue_spec& theirs) {
  return not_reached(st, theirs.name, theirs.home);
}

caf::result<queue_info> declare_log_queue_at_home(self_ptr self, const queue_spec& theirs,
                                                  const queue_spec& spec, bool passive) {
  auto& st = self->state;
  if (auto m = queue_mismatch(st.vhost, theirs, spec); !m.empty() && !passive)
    return invalid(m + " (it lives on node " + theirs.home + ")");
  // A passive declare cannot be sent on as a declare: its flags are not the queue's.
  if (passive) return not_reached(st, theirs.name, theirs.home);
  auto rp = self->make_response_promise<queue_info>();
  declare_at_home(self, spec, theirs.home, rp);
  return rp;
}

void declare_queue_through_log(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                               const caf::actor& requester,
                               caf::typed_response_promise<queue_info> rp) {
  auto& st = self->state;
  queue_spec record = spec;
  record.home = st.node_name;
  persistence::metadata_entry entry;
  vhost_records::put_queue_home(st.vhost, record, entry.changes);
  entry.conditions = {vhost_there(st), queue_home_there(st, spec.name, false)};
  // Requests naming the queue wait for the answer (a bind or consume sent right after).
  st.claims[spec.name].spec = spec;
  st.claims[spec.name].committing = true;
  propose_to_log(self, entry, [=](const std::string& error) mutable {
    auto parked = std::move(self->state.claims[spec.name].parked);
    self->state.claims.erase(spec.name);
    settle_declare(self, spec, limits, requester, rp, error);
    unpark(std::move(parked));
  });
}

caf::result<uint32_t> delete_queue_through_log(self_ptr self, const std::string& name,
                                               bool if_unused, bool if_empty) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end()) return uint32_t{0};
  // Checked before the entry (once committed, the queue goes on every member's word). The name
  // is held from the check on, so no other delete, declare or consume of it is answered
  // meanwhile (they wait: delete_queue parks on a hold). Messages published meanwhile go with
  // the queue, as with any delete.
  hold_name(st, name);
  auto rp = self->make_response_promise<uint32_t>();
  auto what = "queue " + quote(name) + in_vhost(st);
  self->request(queue_handle(q->second.actor), caf::infinite, stats_atom::value)
      .then(
          [=](queue_info& info) mutable {
            std::string refused;
            if (if_unused && info.consumers != 0)
              refused = what + " has " + std::to_string(info.consumers) + " consumer(s)";
            else if (if_empty && info.ready != 0)
              refused = what + " has " + std::to_string(info.ready) + " message(s) ready";
            if (!refused.empty()) {
              release_name(self, name);
              rp.deliver(make_broker_error(reply_code::precondition_failed, refused));
              return;
            }
            auto dropped = static_cast<uint32_t>(info.ready);
            propose_queue_erase(self, name, [=](const std::string& error) mutable {
              if (error.empty())
                rp.deliver(dropped);  // deleted here as the log applied it
              else
                rp.deliver(not_done(what + " not deleted", error));
            });
          },
          [=](caf::error& err) mutable {
            release_name(self, name);
            rp.deliver(std::move(err));
          });
  return rp;
}

void queue_unused_through_log(self_ptr self, const std::string& name) {
  if (claim_pending(self->state, name)) return;  // a delete of it is under way
  propose_queue_erase(self, name, [=](const std::string& error) {
    if (!error.empty())
      log(log_level::warn, "vhost",
          "queue " + quote(name) + in_vhost(self->state) + " is unused (auto-delete or " +
              "x-expires) but was not deleted: " + error);
  });
}

// What the log applies reaches the vhost from its node, which may pass on entries before it has
// told the vhost its name (at start-up, the log replays what LMDB lacks before the cluster
// runs): without the name, no record can be told to be this node's, so those wait.
bool wait_for_name(self_ptr self, std::function<void()> again) {
  auto& st = self->state;
  if (!st.node_name.empty()) return false;
  st.log_queues_waiting.push_back(std::move(again));
  return true;
}

void queue_put_by_log(self_ptr self, const queue_spec& spec) {
  if (wait_for_name(self, [=] { queue_put_by_log(self, spec); })) return;
  auto& st = self->state;
  st.log_queues[spec.name] = spec;
  if (spec.home != st.node_name && st.queues.count(spec.name) != 0)
    log(log_level::warn, "vhost",
        "queue " + quote(spec.name) + in_vhost(st) + " of the metadata log lives on node " +
            spec.home + ", and this node has one of that name too (made before it joined the " +
            "log); this node's copy is the one it uses");
  start_if_home(self, spec);
}

void queue_erased_by_log(self_ptr self, const std::string& name) {
  if (wait_for_name(self, [=] { queue_erased_by_log(self, name); })) return;
  auto& st = self->state;
  auto l = st.log_queues.find(name);
  if (l == st.log_queues.end()) return;
  auto home = l->second.home;
  st.log_queues.erase(l);
  // Elsewhere, what this member reaches of it goes too: the home's own word (its removal, or
  // its list when it meets this member again) may never come, e.g. when it was cut off.
  if (home != st.node_name) return remote_removed(self, name, home);
  auto q = st.queues.find(name);
  if (q != st.queues.end() && vhost_records::stored(q->second.spec)) delete_queue_now(self, name);
}

// After a seed or a snapshot. A record the snapshot lacks is forgotten, but a queue of this
// node's is not deleted for it: a node that left a log of its own to join this cluster brings
// records of that log, and its queues (with their messages) must not go for them. This node's
// durable queues the log lacks (those, and queues made before its log held queues: a standalone
// node founding the cluster, a cluster made before the log) are proposed, homed here.
void queues_replaced_by_log(self_ptr self, const std::vector<queue_spec>& wanted) {
  if (wait_for_name(self, [=] { queues_replaced_by_log(self, wanted); })) return;
  auto& st = self->state;
  std::set<std::string> names;
  for (const auto& spec : wanted) names.insert(spec.name);
  std::vector<std::pair<std::string, std::string>> gone;  // name, home
  for (const auto& [name, spec] : st.log_queues)
    if (names.count(name) == 0 && spec.home != st.node_name) gone.emplace_back(name, spec.home);
  st.log_queues.clear();
  for (const auto& [name, home] : gone) remote_removed(self, name, home);
  for (const auto& spec : wanted) queue_put_by_log(self, spec);
  propose_missing_own_queues(self);
}

// A durable queue of this node's own records whose name the log lacks was made before the log
// held queues (or lost its name to a member's, and stays this node's own). It is never one the
// log deleted: an erase of a name through the log erases its home's own record in the same
// transaction.
void propose_missing_own_queues(self_ptr self) {
  auto& st = self->state;
  if (!exchanges_in_log(st) || st.node_name.empty()) return;
  st.own_queues_offered = true;
  std::vector<std::string> missing;
  for (const auto& [name, q] : st.queues)
    if (vhost_records::stored(q.spec) && st.log_queues.count(name) == 0 && !claim_pending(st, name))
      missing.push_back(name);
  propose_own_queues(self, missing);
}

void log_queues_named(self_ptr self) {
  auto waiting = std::move(self->state.log_queues_waiting);
  self->state.log_queues_waiting.clear();
  for (auto& again : waiting) again();
  if (!self->state.own_queues_offered) propose_missing_own_queues(self);
}

void forget_log_queues_of(self_ptr self, const std::string& node) {
  auto& st = self->state;
  if (!exchanges_in_log(st) || st.node_name.empty()) return;
  std::vector<std::string> names;
  for (const auto& [name, spec] : st.log_queues)
    if (spec.home == node) names.push_back(name);
  if (names.empty()) return;
  constexpr size_t per_entry = 64;
  propose_each(
      self, names, per_entry, true,
      [self](const std::string& name, vhost_records::changes& out) {
        vhost_records::erase_queue_home(self->state.vhost, name, out);
      },
      [self, node](const std::vector<std::string>& group, const std::string& error) {
        if (!error.empty())
          log(log_level::warn, "vhost",
              std::to_string(group.size()) + " queue name(s) of forgotten node " + node +
                  in_vhost(self->state) + " not released: " + error);
      });
}

}  // namespace warren::vhost_parts
