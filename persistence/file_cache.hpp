// file_cache: a bounded, node-wide set of open file descriptors for the queues' files.
//
// Thousands of durable queues must not need thousands of descriptors: a queue's store opens its
// files through this cache, which keeps at most `capacity` of them open and closes the least
// recently used one that nobody holds when it needs room. A descriptor is held (pinned) while a
// handle to it lives, so it is never closed under a write or an fdatasync.
//
// Closing a descriptor loses nothing: written bytes stay in the page cache, and an fdatasync
// through a descriptor opened later flushes them all the same (it syncs the file, not the fd).
//
// Thread safety: queue actors on different scheduler threads share one cache; every call locks.
//
// Caveats: open() throws std::runtime_error naming the path and the system's reason, also when
// the process is out of descriptors after making room (EMFILE). The owner of a path calls
// forget() before it deletes or replaces the file, so a stale descriptor is never reused.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

namespace warren::persistence {

class file_cache {
 public:
  explicit file_cache(size_t capacity);
  ~file_cache();

  file_cache(const file_cache&) = delete;
  file_cache& operator=(const file_cache&) = delete;

  class handle {
   public:
    handle() = default;
    handle(handle&& other) noexcept;
    handle& operator=(handle&& other) noexcept;
    ~handle();
    int fd() const { return fd_; }

   private:
    friend class file_cache;
    handle(file_cache* cache, const std::string* path, int fd)
        : cache_(cache), path_(path), fd_(fd) {}
    void release();
    file_cache* cache_ = nullptr;
    const std::string* path_ = nullptr;  // the key inside the cache's map
    int fd_ = -1;
  };

  /// A descriptor for `path`, opened read-write. With `create`, the file must not exist yet
  /// (O_EXCL): a new file never replaces one already there.
  handle open(const std::string& path, bool create = false);

  /// Closes the descriptor of `path`, if one is open. It must not be held.
  void forget(const std::string& path);

  size_t open_count() const;
  size_t capacity() const { return capacity_; }

 private:
  struct entry {
    int fd = -1;
    int pins = 0;
    std::list<std::string>::iterator lru;  // position in lru_, most recent at the front
  };

  bool evict_one();  // closes the least recently used unpinned descriptor; false if none
  void unpin(const std::string& path);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> open_;
  std::list<std::string> lru_;
};

/// Raises the soft limit on open files to the hard limit; returns the limit now in force.
size_t raise_open_file_limit();

}  // namespace warren::persistence
