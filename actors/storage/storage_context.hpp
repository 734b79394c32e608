// storage_context: what actors need to reach storage: the persistence actor (the only LMDB
// writer), where queue folders live, the fsync policy, the node-wide queue id counter, and the
// node-wide cache of open queue files, the memory ledger and the budgets that make queues page
// messages out to disk.
#pragma once

#include "actors/storage/memory_ledger.hpp"
#include "persistence/file_cache.hpp"
#include "persistence/segment_store.hpp"

#include <caf/actor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace warren {

struct storage_context {
  caf::actor persistence;
  std::string data_dir;
  persistence::fsync_policy fsync = persistence::fsync_policy::batch;
  persistence::segment_store::options segments;
  std::shared_ptr<std::atomic<uint64_t>> next_queue_id = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<persistence::file_cache> files = std::make_shared<persistence::file_cache>(256);
  std::shared_ptr<memory_ledger> memory = std::make_shared<memory_ledger>();
  // A queue holding more than `queue_memory_budget` bytes of messages in memory, or any queue
  // while all of them hold more than `node_memory_budget`, keeps new messages on disk only.
  // 0 = no limit; with both 0 (or no data dir) nothing is paged.
  uint64_t queue_memory_budget = 0;
  uint64_t node_memory_budget = 0;
  // A stream's consumer group commits what it is done with after this many acks, and at least
  // this often while it acks.
  uint64_t stream_commit_acks = 1000;
  int64_t stream_commit_interval_ms = 5000;
  std::shared_ptr<std::atomic<uint64_t>> next_scratch_id =
      std::make_shared<std::atomic<uint64_t>>(0);

  std::string queue_dir(uint64_t id) const { return data_dir + "/queues/" + std::to_string(id); }
  /// Where non-durable queues page messages out; emptied at every start.
  std::string scratch_root() const { return data_dir + "/paging"; }
  std::string scratch_dir(uint64_t id) const { return scratch_root() + "/" + std::to_string(id); }
};

}  // namespace warren
