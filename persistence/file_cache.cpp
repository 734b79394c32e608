#include "persistence/file_cache.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace warren::persistence {

file_cache::file_cache(size_t capacity) : capacity_(capacity < 4 ? 4 : capacity) {}

file_cache::~file_cache() {
  for (auto& [path, e] : open_) ::close(e.fd);
}

file_cache::handle::handle(handle&& other) noexcept
    : cache_(other.cache_), path_(other.path_), fd_(other.fd_) {
  other.cache_ = nullptr;
  other.fd_ = -1;
}

file_cache::handle& file_cache::handle::operator=(handle&& other) noexcept {
  if (this != &other) {
    release();
    cache_ = other.cache_;
    path_ = other.path_;
    fd_ = other.fd_;
    other.cache_ = nullptr;
    other.fd_ = -1;
  }
  return *this;
}

file_cache::handle::~handle() {
  release();
}

void file_cache::handle::release() {
  if (cache_ != nullptr) cache_->unpin(*path_);
  cache_ = nullptr;
  fd_ = -1;
}

file_cache::handle file_cache::open(const std::string& path, bool create) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (auto i = open_.find(path); i != open_.end()) {
    if (create) throw std::runtime_error("cannot create " + path + ": " + std::strerror(EEXIST));
    ++i->second.pins;
    lru_.splice(lru_.begin(), lru_, i->second.lru);
    return handle(this, &i->first, i->second.fd);
  }
  while (open_.size() >= capacity_ && evict_one()) {
  }
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0 && (errno == EMFILE || errno == ENFILE) && evict_one())
    fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0)
    throw std::runtime_error(std::string(create ? "cannot create " : "cannot open ") + path + ": " +
                             std::strerror(errno));
  lru_.push_front(path);
  auto [i, inserted] = open_.emplace(path, entry{fd, 1, lru_.begin()});
  return handle(this, &i->first, fd);
}

void file_cache::forget(const std::string& path) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto i = open_.find(path);
  if (i == open_.end()) return;
  ::close(i->second.fd);
  lru_.erase(i->second.lru);
  open_.erase(i);
}

size_t file_cache::open_count() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return open_.size();
}

bool file_cache::evict_one() {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    auto i = open_.find(*it);
    if (i->second.pins > 0) continue;
    ::close(i->second.fd);
    lru_.erase(std::next(it).base());
    open_.erase(i);
    return true;
  }
  return false;
}

void file_cache::unpin(const std::string& path) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (auto i = open_.find(path); i != open_.end() && i->second.pins > 0) --i->second.pins;
}

size_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    auto wanted = limit;
    wanted.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &wanted) == 0) limit = wanted;
  }
  return limit.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(limit.rlim_cur);
}

}  // namespace warren::persistence
