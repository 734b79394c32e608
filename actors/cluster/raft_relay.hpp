// raft_relay: where the cluster actor and this node's metadata log meet (issue 33).
//
// Raft's frames travel between members over the cluster link only: the log hands a frame to
// its send function (on the log's thread), which sends it to the cluster actor with the relay's
// token, and the cluster actor passes it to the member's cluster actor. A frame from a member is
// given to the log here. The log is made after the node has joined its cluster (how it starts
// depends on what the members hold: apps/node_metadata_log.hpp), so until it is attached frames
// from members are dropped; raft sends them again.
//
// The token is random and never leaves the process: a message that carries it comes from this
// node's log, since anything sent from another node names its sender's node and is refused.
#pragma once

#include "persistence/metadata_log.hpp"

#include <caf/actor.hpp>
#include <caf/weak_intrusive_ptr.hpp>
#include "persistence/raft_frame.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace warren {

class raft_relay {
 public:
  raft_relay();

  raft_relay(const raft_relay&) = delete;
  raft_relay& operator=(const raft_relay&) = delete;

  uint64_t token() const { return token_; }

  /// Gives the relay the node's log; nullptr before the log is destroyed.
  void attach(persistence::metadata_log* log);
  /// Whether this node holds a log with a configuration: one it founded, or one whose leader
  /// added it. A log made to join, still empty, does not count: a node deciding whether to
  /// found a log must not join a member that is itself waiting to join.
  bool holds_log();

  // --- from the cluster actor ---
  /// A frame from a member's log, its sender checked.
  void receive(persistence::raft_frame frame);
  /// A member's link came up or went down: raft can reach it, or not.
  void member_up(const std::string& name);
  void member_down(const std::string& name);
  /// The log's view as last published; none before a log is attached.
  std::optional<persistence::metadata_log::view> latest();
  /// Starts adding or removing a voter unless a change is under way (raft takes one at a time);
  /// false when one is. Runs only on the leader; `log_note` hears how it ended.
  bool change_voters(bool add, persistence::metadata_log::member who,
                     std::function<void(const std::string& error)> log_note);

  /// Proposes `entry` through this node's log. `done` runs on the log's thread, or at once
  /// without a log, with "" or why not, and the entry's index.
  void submit(persistence::metadata_entry entry, persistence::metadata_log::indexed_answer done);
  /// Runs `then` once this node's log has applied up to `index` (at once without a log, with
  /// no_log).
  void after_applied(uint64_t index, persistence::metadata_log::answer then);
  static constexpr const char* no_log = "this node holds no metadata log";

  /// The cluster actor that carries frames (it tells the relay when it starts).
  void set_cluster(const caf::actor& cluster);

  // --- from the log's thread ---
  /// The log's send function: hands `frame` to the cluster actor for member `to`; false when
  /// that member is not reachable now.
  bool send(const std::string& to, persistence::raft_frame frame);

 private:
  const uint64_t token_;
  std::mutex mutex_;
  persistence::metadata_log* log_ = nullptr;  // guarded by mutex_
  std::set<std::string> up_;                  // guarded by mutex_
  caf::weak_actor_ptr cluster_;               // guarded by mutex_; weak: the actor holds us
  std::atomic<bool> changing_{false};
};

}  // namespace warren
