// metadata_log: the cluster's metadata as a Raft log on disk (libraft's raft_uv under
// DATA_DIR/raft), applied into LMDB by metadata_fsm (issue 33). A change is proposed from any
// thread and answered once it is committed and applied: the entries applied in one iteration of
// the log's loop go to LMDB in one transaction (metadata_fsm's grouped commits), then their
// proposers are answered.
//
// A new folder is made whole (as DIR.new, then renamed) and, unless the member joins a running
// cluster (where the leader adds it), holds a first configuration of the founders: this member
// alone by default. A folder that exists keeps its configuration. Raft's messages travel as frames
// (metadata_link) that the node carries over the cluster link: no port is opened here.
//
// Each new leader commits a barrier (an empty entry) of its own term at once. libraft 0.15 commits
// an entry of an earlier term by counting the members that hold it, which Raft's Figure 8 shows
// unsafe: such an entry can still be overwritten by a later leader. Appended before the new
// leader has heard back from anyone, the barrier travels with those entries, so they commit
// with an entry of the leader's own term, as Raft requires (upstream fixed this in 0.17.1).
//
// A log starts from a seed: the first leader that finds its LMDB unseeded (after its barrier,
// so that it knows every committed entry) proposes its records of the log's tables as the log's
// first state, which replaces what every member held; later seeds change nothing. A leader takes
// no change before its barrier and that seed are in the log, so none is lost under the seed.
//
// Only the leader takes changes. A proposal on another member is answered at once with the
// leader's address, for the caller to forward it; with no leader it waits, and is refused after
// quorum_timeout_ms naming how many members this one hears from. A proposal whose leader lost
// its leadership before the commit is answered as of unknown outcome: it may still be applied.
//
// libraft and libuv are not thread-safe: they run on the log's own thread, with its own uv loop.
// Other threads hand it work through a mutex-guarded queue and a uv_async wake-up.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_fsm.hpp"
#include "persistence/metadata_link.hpp"
#include "persistence/metadata_log_codec.hpp"

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace warren::persistence {

class metadata_log {
 public:
  struct member {
    uint64_t id;
    std::string address;
  };

  struct options {
    std::string dir;               // raft's folder: DATA_DIR/raft, made if missing
    uint64_t id = 1;               // this member's raft id
    std::string address = "self";  // its address in raft's configuration
    /// The voters a new directory starts with; empty: this member alone. Every founding member
    /// must be given the same list.
    std::vector<member> founders;
    /// A member joining a running cluster: it never bootstraps and waits for the leader.
    bool joining = false;
    raft_frame_sender send;  // how frames reach other members; empty: a cluster of one
    unsigned election_timeout_ms = 100;
    unsigned quorum_timeout_ms = 5000;  // how long a proposal waits for a leader
    unsigned snapshot_threshold = 0;    // entries between snapshots; 0: libraft's default
    unsigned snapshot_trailing = 0;     // entries kept behind a snapshot; 0: libraft's default
    /// Called once, on the log's thread, when this member first holds a term (on disk: from
    /// then on it may have voted, and a new folder under its id could vote twice).
    std::function<void()> on_first_term;
    /// Told what each applied entry changed, on the log's thread (metadata_fsm::on_change).
    metadata_fsm::change_listener on_change;
  };

  /// What this member knows of the cluster at one moment.
  struct view {
    bool leading = false;
    uint64_t leader_id = 0;  // 0: no leader known, or not heard from lately
    std::string leader_address;
    uint64_t term = 0;
    uint64_t applied = 0;  // the last index applied into LMDB
    /// This member leads and has committed an entry of its own term, so that everything before
    /// it is committed too (what a leader must know before it answers a read). Each new leader
    /// commits an empty entry (a barrier) for it at once.
    bool term_committed = false;
    std::vector<member> voters;
    std::vector<member> others;    // in the configuration without a vote (being added)
    uint64_t refused_streams = 0;  // raft streams ended for what a peer sent on them
  };

  /// The start of the answer to a proposal made on a member that does not lead.
  static constexpr const char* not_leader = "not the leader";

  /// How a proposal ended: "" when committed and applied, else what went wrong.
  using answer = std::function<void(const std::string& error)>;
  /// The same with the entry's index in the log (0 when it has none): other members have
  /// applied the entry once their applied index reaches it.
  using indexed_answer = std::function<void(const std::string& error, uint64_t index)>;

  /// Opens (or makes) the log and starts its thread; throws std::runtime_error naming what
  /// failed. Entries in the log beyond what `store` applied are applied again on start.
  metadata_log(lmdb_store& store, options opts);
  /// Stops raft and the thread. Proposals not answered yet are answered with an error.
  ~metadata_log();

  metadata_log(const metadata_log&) = delete;
  metadata_log& operator=(const metadata_log&) = delete;

  /// The start of the answer to an entry committed without its changes, followed by the
  /// position of the condition that did not hold (failed_condition reads it back).
  static constexpr const char* conflict = "conflict: condition ";
  /// The condition an answer names as not holding; none for any other answer.
  static std::optional<size_t> failed_condition(const std::string& error);
  /// Follows `conflict` and the condition when the member that asked has not applied the entry
  /// yet (cut off from the leader right after the commit): it cannot read what made it fail.
  static constexpr const char* not_applied_here = "; not applied on this node yet";
  /// The start of the answer to an entry refused before the log took it, because a change or a
  /// condition in it could not be stored or looked up (a key too long for LMDB, a value that
  /// does not decode, a table the log does not carry); what unstorable() says follows.
  static constexpr const char* unstorable_change = "not a change the metadata log can store";
  /// What keeps `entry` from being stored by every member, or "".
  static std::string unstorable(const metadata_entry& entry);

  /// Proposes one batch of changes, from any thread. `done` runs on the log's thread: keep it
  /// short, and do not call back into this object from it.
  void propose(std::vector<meta_mutation> batch, answer done);
  /// Proposes changes that are applied only if every condition holds when the entry is
  /// applied; otherwise the entry is committed empty and answered with `conflict`.
  void propose_if(metadata_entry entry, answer done);
  /// propose_if, answered with the entry's index.
  void submit(metadata_entry entry, indexed_answer done);
  /// Runs `then` on the log's thread once this member has applied the log up to `index`;
  /// with "the metadata log is closing" should it close first.
  void after_applied(uint64_t index, answer then);

  /// Adds a voter (on the leader): answered once it holds the log and votes.
  void add_member(member m, answer done);
  /// Removes a member (on the leader): answered once the configuration without it committed.
  void remove_member(uint64_t id, answer done);

  /// A frame from another member, from any thread.
  void receive(raft_frame frame);
  /// The link to the member at `address` went down, from any thread.
  void member_lost(std::string address);
  /// This member's view, from any thread but the log's; waits for the log's thread.
  view current();
  /// The view as the log's thread last published it (every view_interval_ms, and after each
  /// batch of work): never waits, so that actors can ask for it.
  view latest();
  static constexpr unsigned view_interval_ms = 100;

 private:
  struct proposal {
    metadata_log* log;
    metadata_entry entry;
    indexed_answer done;
    struct raft_apply req;
    uint64_t arrived = 0;  // uv_now when the log thread took it
  };
  struct barrier {
    metadata_log* log;
    uint64_t term;
    struct raft_barrier req;
  };
  struct member_change {
    metadata_log* log;
    bool add;
    member who;
    answer done;
    struct raft_change req;
    bool assigned = false;  // an add's second step (voter) is under way
  };

  lmdb_store& store_;
  options opts_;
  metadata_fsm fsm_;
  uv_loop_t loop_{};
  uv_async_t wake_{};
  uv_timer_t retry_{};
  uv_timer_t publish_{};
  uv_check_t lead_check_{};  // after each loop iteration: a new leader's barrier
  std::unique_ptr<metadata_link> link_;
  raft_io io_{};
  struct raft raft_ {};
  std::mutex mutex_;
  std::deque<proposal*> incoming_;           // guarded by mutex_
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_: run on the log thread
  std::deque<member_change*> assigning_;     // the log thread's: adds due to become voters
  bool stopping_ = false;                    // guarded by mutex_
  std::deque<proposal*> waiting_;            // the log thread's: until there is a leader
  std::thread thread_;
  std::mutex view_mutex_;
  view latest_;                        // guarded by view_mutex_
  bool term_noted_ = false;            // the log thread's: on_first_term was called
  uint64_t barrier_term_ = 0;          // the log thread's: the term whose barrier was proposed
  uint64_t barrier_applied_term_ = 0;  // the log thread's: the term whose barrier was applied
  uint64_t committed_term_ = 0;        // the log thread's: that term's leader is ready for changes
  static constexpr size_t max_apply_waiters = 4096;
  std::multimap<uint64_t, answer> after_applied_;  // the log thread's: by index
  bool notice_due_ = false;        // the log thread's: a change committed since the last notice
  bool notice_in_flight_ = false;  // the log thread's: a commit notice is under way
  // The log thread's: proposals applied, answered once LMDB holds them, by index.
  std::multimap<uint64_t, proposal*> answer_when_written_;

  void open(std::promise<void>& started);
  view make_view();
  void publish_view();
  void run(std::promise<void>& started);
  bool run_on_loop(std::function<void()> task);
  void take_incoming();
  void submit_waiting();
  bool refuse_unless_leading(const indexed_answer& done, uint64_t arrived);
  std::string why_not_leading() const;
  std::string leader_heard_from() const;
  void refused_change(member_change* c, int rc);
  std::string no_quorum() const;
  void assign_voters();
  void change_members(member_change* c);
  void commit_own_term();
  void seed_if_unseeded();
  void send_commit_notice();
  void run_applied_waiters();
  static void on_barrier(struct raft_barrier* req, int status);
  static void on_member_changed(struct raft_change* req, int status);
  void shut_down();
  static void on_applied(struct raft_apply* req, int status, void* result);
  static void answer_applied(proposal* p, uint64_t index, const metadata_fsm::outcome& applied);
  bool write_applied();
  static void on_raft_closed(struct raft* r);
};

}  // namespace warren::persistence
