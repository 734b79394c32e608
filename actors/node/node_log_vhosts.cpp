// The node's vhosts when the cluster keeps them in the metadata log (issue 33).
//
// Adding, deleting and limiting a vhost is a log entry (node_vhosts.cpp makes it); the vhosts
// the node runs follow what its log applied, in log order: an added vhost's actor starts, a
// deleted one's stops (its permissions, exchanges, queues and bindings left LMDB with the
// entry), and new limits reach its actor. A vhost deleted and added again before its old actor
// stopped starts anew once it has.
//
// Exchanges, bindings and queues still travel between members the old way, so a member may hear
// of one in a vhost its log has not applied yet: the member that made the vhost applied it
// first. What comes for a vhost unknown here waits for this node to sync with the log (every
// entry committed before then applied), and is taken in arrival order, or dropped if the vhost
// is still unknown.
#include "actors/node/node_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <chrono>
#include <iterator>
#include <utility>

namespace warren::node_parts {

namespace {

// What may wait for one vhost: a member's burst of changes, not an unbounded backlog.
constexpr size_t max_parked_per_vhost = 10000;

void vhost_stopped(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto stopping = st.vhosts_stopping.find(name);
  if (stopping == st.vhosts_stopping.end()) return;
  auto waiting = std::move(stopping->second);
  st.vhosts_stopping.erase(stopping);
  if (auto again = st.vhosts_to_restart.find(name); again != st.vhosts_to_restart.end()) {
    auto limits = again->second;
    st.vhosts_to_restart.erase(again);
    vhost_put_by_log(self, name, limits);
    replay_exchanges(self, name);
  }
  for (auto& then : waiting) then();
}

void run_parked(self_ptr self, const std::string& vhost, const std::string& sync_error) {
  auto& st = self->state;
  auto parked = st.parked_for_vhost.find(vhost);
  if (parked == st.parked_for_vhost.end()) return;
  // A vhost of that name deleted by the log still stops, perhaps to start again (added anew):
  // what is parked stays parked, in order, until it has.
  if (st.vhosts.count(vhost) == 0 && st.vhosts_stopping.count(vhost) != 0)
    return when_vhost_stopped(self, vhost, [=] { run_parked(self, vhost, sync_error); });
  auto retries = std::move(parked->second);
  st.parked_for_vhost.erase(parked);
  bool here = st.vhosts.count(vhost) != 0;
  if (!here)
    log(log_level::warn, "cluster",
        std::to_string(retries.size()) + " change(s) from members for vhost " + quote(vhost) +
            " not applied: no such vhost here" +
            (sync_error.empty() ? std::string() : " (" + sync_error + ")"));
  for (auto& retry : retries) retry(here);
}

}  // namespace

void vhost_put_by_log(self_ptr self, const std::string& name, const vhost_limits& limits) {
  auto& st = self->state;
  if (st.vhosts_stopping.count(name) != 0) {
    st.vhosts_to_restart[name] = limits;
    return;
  }
  st.limits_of[name] = limits;
  if (auto v = st.vhosts.find(name); v != st.vhosts.end()) {
    self->send(vhost_handle(v->second), settings_atom::value, limits);
    return;
  }
  spawn_vhost(self, name, {});
  log(log_level::info, "node", "vhost " + quote(name) + " added");
}

void vhost_erased_by_log(self_ptr self, const std::string& name) {
  auto& st = self->state;
  st.vhosts_to_restart.erase(name);  // added again, then deleted again, while stopping
  st.exchanges_to_replay.erase(name);
  if (st.vhosts.count(name) == 0) return;
  std::vector<std::string> users;
  for (const auto& [key, p] : st.permissions)
    if (key.second == name) users.push_back(key.first);
  for (const auto& user : users) forget_permission(self, user, name);
  st.vhosts_stopping[name];
  drop_vhost(self, name, false, [=](const caf::error& err) {
    if (err)
      log(log_level::warn, "node",
          "vhost " + quote(name) +
              " deleted, but its actor stopped with: " + to_string(describe(err)));
    else
      log(log_level::info, "node", "vhost " + quote(name) + " deleted");
    vhost_stopped(self, name);
  });
}

void vhosts_replaced_by_log(self_ptr self, const std::vector<persistence::meta_mutation>& records) {
  std::map<std::string, vhost_limits> wanted;
  for (const auto& m : records)
    if (m.table == persistence::meta_table::vhosts) {
      auto v = persistence::decode_vhost(m.value);
      wanted[v.name] = v.limits;
    }
  auto& st = self->state;
  for (auto again = st.vhosts_to_restart.begin(); again != st.vhosts_to_restart.end();) {
    if (wanted.count(again->first) != 0) {
      ++again;
      continue;
    }
    st.exchanges_to_replay.erase(again->first);
    again = st.vhosts_to_restart.erase(again);
  }
  std::vector<std::string> gone;
  for (const auto& [name, vhost] : st.vhosts)
    if (wanted.count(name) == 0) gone.push_back(name);
  for (const auto& name : gone) vhost_erased_by_log(self, name);
  for (const auto& [name, limits] : wanted) vhost_put_by_log(self, name, limits);
}

void when_vhost_stopped(self_ptr self, const std::string& name, std::function<void()> then) {
  auto stopping = self->state.vhosts_stopping.find(name);
  if (stopping == self->state.vhosts_stopping.end()) return then();
  stopping->second.push_back(std::move(then));
}

bool wait_for_vhost(self_ptr self, const std::string& vhost, std::function<void(bool)> retry) {
  auto& st = self->state;
  auto parked = st.parked_for_vhost.find(vhost);
  bool first = parked == st.parked_for_vhost.end();
  if (first) {
    if (st.vhosts.count(vhost) != 0 || !log_backed(st)) return false;
    parked = st.parked_for_vhost.emplace(vhost, std::vector<std::function<void(bool)>>{}).first;
  }
  if (parked->second.size() >= max_parked_per_vhost) {
    log(log_level::warn, "cluster",
        "a change from a member for vhost " + quote(vhost) + " dropped: " +
            std::to_string(max_parked_per_vhost) + " wait already for this node to learn of it");
    retry(false);
    return true;
  }
  parked->second.push_back(std::move(retry));
  // Last: the sync may answer at once (no cluster actor), running and erasing what is parked.
  if (first) sync_then(self, [=](const std::string& error) { run_parked(self, vhost, error); });
  return true;
}

}  // namespace warren::node_parts
