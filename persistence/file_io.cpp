#include "persistence/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace warren::persistence {

int read_whole(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  out.clear();
  char buf[1 << 16];
  int err = 0;
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return err;
}

bool write_all(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    auto n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool write_new_file(const std::string& path, const std::string& data, bool durable) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write_all(fd, data.data(), data.size(), 0) && (!durable || ::fdatasync(fd) == 0);
  int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

bool truncate_file(const std::string& path, uint64_t size) {
  return ::truncate(path.c_str(), static_cast<off_t>(size)) == 0;
}

}  // namespace warren::persistence
