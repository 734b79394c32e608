#include "persistence/data_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace warren::persistence {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

// Creates `path` (and missing parents); true when it was not there. A new folder's name is
// durable only once its parent is synced (see make_durable_dir).
bool make_dir(const std::string& path) {
  std::error_code ec;
  bool created = fs::create_directories(path, ec);
  if (ec) throw std::runtime_error("cannot create directory " + path + ": " + ec.message());
  return created;
}

// A folder a power cut must not take back: without the parent's sync, a new meta/ or queues/
// could vanish with every queue folder in it (found by the power-cut simulator). Every folder
// created here gets its parent synced. `path` itself, when it was there already, gets its
// parent synced too (a start cut short after creating it may not have), best effort: a parent
// this user may not open, or a file system that cannot sync folders, does not stop a start over
// a folder that exists.
void make_durable_dir(const std::string& path) {
  // The missing folders, deepest first, found on the absolute path; `path` itself is created as
  // given (through any symlink in it).
  std::vector<fs::path> missing;
  auto full = fs::absolute(path).lexically_normal();
  if (!full.has_filename()) full = full.parent_path();  // "a/b/" names b
  for (auto p = full; p.has_parent_path() && p != p.parent_path() && !fs::exists(p);
       p = p.parent_path())
    missing.push_back(p);
  make_dir(path);
  for (const auto& created : missing) sync_directory(created.parent_path().string());
  if (!missing.empty()) return;
  try {
    sync_directory(full.parent_path().string());
  } catch (const std::runtime_error&) {  // best effort, as said above
  }
}

}  // namespace

data_dir::data_dir(std::string path) : path_(std::move(path)) {
  make_durable_dir(path_);
  auto lock_path = path_ + "/lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) fail("cannot open " + lock_path, errno);
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    auto n = ::pread(lock_fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw std::runtime_error("data dir " + path_ + " is in use by another warren-node (pid " +
                             holder + ")");
  }
  auto pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0)
    fail("cannot write " + lock_path, errno);
  make_durable_dir(meta_path());
  make_durable_dir(path_ + "/queues");
}

data_dir::~data_dir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string data_dir::queue_path(uint64_t queue_id) const {
  return path_ + "/queues/" + std::to_string(queue_id);
}

size_t data_dir::queue_folder_count() const {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(path_ + "/queues")) ++n;
  return n;
}

data_dir::orphans data_dir::find_orphans(const std::set<uint64_t>& live) const {
  orphans out;
  for (const auto& entry : fs::directory_iterator(path_ + "/queues")) {
    const auto name = entry.path().filename().string();
    uint64_t id = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    bool numeric = ec == std::errc() && end == name.data() + name.size();
    if (numeric && live.count(id) != 0) continue;
    if (numeric) out.max_id = std::max(out.max_id, id);
    out.names.push_back(entry.path().string());
  }
  return out;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw std::runtime_error("cannot remove " + path + ": " + ec.message());
}

void sync_directory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory " + path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail("cannot fsync directory " + path, err);
}

}  // namespace warren::persistence
