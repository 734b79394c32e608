// How a warren-node's metadata log starts (issue 33): opened, founded or joined, under
// DATA_DIR/raft, with raft id raft_id_of(node name) and the node name as its raft address.
// A standalone node (no secret or no cluster port) keeps none: with no one to agree with, LMDB
// alone holds its metadata, and a log would cost a thread and a second fsync per change.
//
// The data dir records which log it belongs to (lmdb_store::log_identity) before the log's
// folder is made, so that what a start finds says what happened:
// - a log that was opened before must be there and belong to this node's name: a lost or
//   emptied folder, or a renamed node, stops the start, named. (A joiner's log counts as opened
//   once it holds a term, which it keeps on disk before it can vote.) A member that made a new log
//   under an id that voted before could vote twice in one term, and elect a second leader. (A node
//   that never had a member voted alone: it makes a new one, leaving a log of a former name
//   behind);
// - a log made halfway (its intent recorded, no folder) is made again the same way; so is a
//   founding recorded over an empty joiner's folder (no term in it), whose folder is made anew;
// - with no log: a node with no other member and nothing to join (the first node) founds one
//   alone. Every other node joins: its empty log waits for the leader to add it as a voter. It
//   never founds from what it learned while joining, which can be partial (a member not met yet,
//   one that founds a moment later, a --join address that is the node itself): two logs could
//   then meet, and elect two leaders. So nodes that all --join each other keep waiting, as does
//   a cluster made before the log existed, until a way to found one for them (a list of
//   founders given to each, as etcd's --initial-cluster) exists.
// A node joining a cluster for the first time leaves a log it held alone behind (moved aside to
// DATA_DIR/raft.before-join-STAMP): it joins the cluster's log instead.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_log.hpp"

#include <memory>
#include <string>
#include <vector>

namespace warren::node {

enum class log_start { none, open, found, join };

/// What a start finds.
struct log_facts {
  persistence::lmdb_store::log_identity identity;
  bool folder = false;               // DATA_DIR/raft exists
  bool raft_state = false;           // and holds raft's metadata (a term, perhaps a vote)
  std::string self;                  // this node's name
  bool clustered = false;            // a secret and a cluster port
  bool first_join = false;           // --join, and no member known yet
  std::vector<std::string> members;  // the other members known
};

/// How the log starts. Throws std::runtime_error naming the data dir and what to do when the
/// node must not start.
log_start decide_log_start(const log_facts& facts, const std::string& data_dir);

/// Moves DATA_DIR/raft aside and clears the identity, for a first join; returns where it went,
/// "" when there was no log.
std::string leave_own_log(persistence::lmdb_store& store, const std::string& data_dir);

/// A clustered node without members whose log was made under another node name voted alone:
/// its log is moved aside (leave_own_log) and `facts` updated, so that it founds one under its
/// new name. Returns where the log went, "" when nothing moved.
std::string leave_log_of_former_name(persistence::lmdb_store& store, log_facts& facts,
                                     const std::string& data_dir);

struct log_settings {
  std::string data_dir;
  std::string self;
  persistence::raft_frame_sender send;
  unsigned election_timeout_ms = 1000;
  unsigned quorum_timeout_ms = 5000;
  /// Told what each applied entry changed (metadata_fsm::on_change), on the log's thread.
  persistence::metadata_fsm::change_listener on_change;
};

/// Records the intent, makes or opens the log, and records it as open. Throws
/// std::runtime_error naming DATA_DIR/raft when it cannot.
std::unique_ptr<persistence::metadata_log> start_metadata_log(persistence::lmdb_store& store,
                                                              log_start how,
                                                              const log_settings& settings);

}  // namespace warren::node
