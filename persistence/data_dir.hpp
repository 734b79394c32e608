// data_dir: the broker's data directory and its lock.
//
//   DATA_DIR/lock              flock'ed by the running node; holds its pid
//   DATA_DIR/meta/             LMDB environment
//   DATA_DIR/queues/<id>/      one folder per durable queue, named by its numeric id
//
// Opening creates what is missing and takes the lock; a second node on the same directory gets
// std::runtime_error naming the directory and the pid holding it. The lock goes with the
// process (flock), so a node killed with SIGKILL leaves nothing to clean up by hand.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace warren::persistence {

class data_dir {
 public:
  explicit data_dir(std::string path);
  ~data_dir();

  data_dir(const data_dir&) = delete;
  data_dir& operator=(const data_dir&) = delete;

  const std::string& path() const { return path_; }
  std::string meta_path() const { return path_ + "/meta"; }
  std::string queue_path(uint64_t queue_id) const;

  /// How many entries DATA_DIR/queues holds (queue folders, or anything else put there).
  size_t queue_folder_count() const;

  /// Entries of DATA_DIR/queues that belong to no queue record. They are left as they are
  /// (queue deletion removes the folder before the record, so an orphan is what damaged
  /// metadata forgot, or something a person put there); `max_id` is the highest numeric name
  /// among them, which a new queue must never take.
  struct orphans {
    std::vector<std::string> names;
    uint64_t max_id = 0;
  };
  orphans find_orphans(const std::set<uint64_t>& live) const;

 private:
  std::string path_;
  int lock_fd_ = -1;
};

/// Removes a directory tree; missing is fine. Throws std::runtime_error on other errors.
void remove_tree(const std::string& path);

/// fsyncs a directory so that entries created, renamed or removed in it are durable.
void sync_directory(const std::string& path);

}  // namespace warren::persistence
