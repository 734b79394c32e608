// metadata_log: the cluster's metadata as a Raft log on disk (libraft's raft_uv under
// DATA_DIR/raft), applied into LMDB by metadata_fsm (issue 33). A change is proposed from any
// thread and answered once it is committed and applied.
//
// This part runs one member: the log bootstraps a configuration of this member alone on a new
// directory, elects itself, and needs no network. Its transport opens no port and reaches no
// one; the cluster link will carry raft's messages between members.
//
// libraft and libuv are not thread-safe: they run on the log's own thread, with its own uv loop.
// Other threads hand it work through a mutex-guarded queue and a uv_async wake-up.
#pragma once

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_fsm.hpp"

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warren::persistence {

class metadata_log {
 public:
  struct options {
    std::string dir;               // raft's folder: DATA_DIR/raft, made if missing
    uint64_t id = 1;               // this member's raft id
    std::string address = "self";  // its address in raft's configuration
    unsigned election_timeout_ms = 100;
    unsigned snapshot_threshold = 0;  // entries between snapshots; 0: libraft's default
    unsigned snapshot_trailing = 0;   // entries kept behind a snapshot; 0: libraft's default
  };

  /// How a proposal ended: "" when committed and applied, else what went wrong.
  using answer = std::function<void(const std::string& error)>;

  /// Opens (or makes) the log and starts its thread; throws std::runtime_error naming what
  /// failed. Entries in the log beyond what `store` applied are applied again on start.
  metadata_log(lmdb_store& store, options opts);
  /// Stops raft and the thread. Proposals not answered yet are answered with an error.
  ~metadata_log();

  metadata_log(const metadata_log&) = delete;
  metadata_log& operator=(const metadata_log&) = delete;

  /// Proposes one batch of changes, from any thread. `done` runs on the log's thread: keep it
  /// short, and do not call back into this object from it.
  void propose(std::vector<meta_mutation> batch, answer done);

 private:
  struct proposal {
    metadata_log* log;
    std::vector<meta_mutation> batch;
    answer done;
    struct raft_apply req;
  };

  lmdb_store& store_;
  options opts_;
  metadata_fsm fsm_;
  uv_loop_t loop_{};
  uv_async_t wake_{};
  uv_timer_t retry_{};
  raft_uv_transport transport_{};
  raft_io io_{};
  struct raft raft_ {};
  std::mutex mutex_;
  std::deque<proposal*> incoming_;  // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  std::deque<proposal*> waiting_;   // the log thread's: until there is a leader
  std::thread thread_;

  void open(std::promise<void>& started);
  void run(std::promise<void>& started);
  void take_incoming();
  void submit_waiting();
  void shut_down();
  static void on_applied(struct raft_apply* req, int status, void* result);
  static void on_raft_closed(struct raft* r);
};

}  // namespace warren::persistence
