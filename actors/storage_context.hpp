// storage_context: what actors need to reach storage: the persistence actor (the only LMDB
// writer), where queue folders live, the fsync policy, the node-wide queue id counter, and the
// node-wide cache of open queue files.
#pragma once

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

  std::string queue_dir(uint64_t id) const { return data_dir + "/queues/" + std::to_string(id); }
};

}  // namespace warren
