// An LD_PRELOAD shim that records, in order, every change a process makes to the files under
// one folder, so that powercut_model can rebuild the states a power cut could leave. The folder
// is named by WARREN_IO_ROOT (it must exist when the process starts), the log by WARREN_IO_LOG
// (outside the folder). Without both, every call passes straight through.
//
// What is recorded: files created (open/openat/creat with O_CREAT that made a new file), O_TRUNC,
// write/pwrite/writev/pwritev (the bytes and the file offset: write and writev take the fd's
// position, or the end of the file under O_APPEND), ftruncate/truncate, rename/renameat,
// unlink/unlinkat/remove/rmdir, mkdir/mkdirat, and fsync/fdatasync of files and of folders
// (logged only once they succeeded). A write on an fd opened with O_DSYNC or O_SYNC is durable
// at once (LMDB writes its meta pages that way). LMDB's lock.mdb is ignored: it is mapped
// shared memory that LMDB rebuilds at every start.
//
// One mutex is held around "real call + log append" for files under the folder, so that the
// log's order is the order the calls took effect in; fds elsewhere (sockets, stderr) cost one
// table lookup. Files are named by inode number in write, truncate and sync records (an fd may
// outlive its name), and by path relative to the folder in the records that change names.
// Not covered: dup/dup2/fcntl(F_DUPFD) of a recorded fd, mmap writes, renameat2, fds beyond
// max_fds, and writes through stdio (none of which Warren or LMDB use on these files).
//
// Log format (little-endian, as the machine's): records one after another, each a 32-byte
// header {u32 size (whole record), u8 op, u8 flags, u16 zero, u32 path_len, u32 path2_len,
// u64 ino, u64 offset} followed by path, path2 and the written bytes (size - 32 - both paths).
// Ops and the header: io_log_format.h; flags bit 0 = durable write. The first record is op_root, naming the
// folder's own inode.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io_log_format.h"

enum { max_fds = 1 << 16, kind_none = 0, kind_file = 1, kind_dir = 2 };

// What is known about an fd opened on something under the folder.
struct fd_info {
  uint64_t ino;
  uint8_t kind;
  uint8_t writable;
  uint8_t dsync;
  uint8_t append;
};

static struct {
  int (*openat)(int, const char*, int, ...);
  ssize_t (*write)(int, const void*, size_t);
  ssize_t (*pwrite)(int, const void*, size_t, off_t);
  ssize_t (*writev)(int, const struct iovec*, int);
  ssize_t (*pwritev)(int, const struct iovec*, int, off_t);
  int (*ftruncate)(int, off_t);
  int (*truncate)(const char*, off_t);
  int (*renameat)(int, const char*, int, const char*);
  int (*unlinkat)(int, const char*, int);
  int (*remove)(const char*);
  int (*mkdirat)(int, const char*, mode_t);
  int (*fsync)(int);
  int (*fdatasync)(int);
  int (*close)(int);
} real;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct fd_info fds[max_fds];
static int enabled;
static int log_fd = -1;
static char root[PATH_MAX];   // as given, normalized
static char root2[PATH_MAX];  // its realpath, when that differs
static char* buffer;          // one log record, assembled under the mutex
static size_t buffer_size;

static void resolve_real(void) {
  if (real.close != NULL) return;
  real.openat = dlsym(RTLD_NEXT, "openat");
  real.write = dlsym(RTLD_NEXT, "write");
  real.pwrite = dlsym(RTLD_NEXT, "pwrite");
  real.writev = dlsym(RTLD_NEXT, "writev");
  real.pwritev = dlsym(RTLD_NEXT, "pwritev");
  real.ftruncate = dlsym(RTLD_NEXT, "ftruncate");
  real.truncate = dlsym(RTLD_NEXT, "truncate");
  real.renameat = dlsym(RTLD_NEXT, "renameat");
  real.unlinkat = dlsym(RTLD_NEXT, "unlinkat");
  real.remove = dlsym(RTLD_NEXT, "remove");
  real.mkdirat = dlsym(RTLD_NEXT, "mkdirat");
  real.fsync = dlsym(RTLD_NEXT, "fsync");
  real.fdatasync = dlsym(RTLD_NEXT, "fdatasync");
  real.close = dlsym(RTLD_NEXT, "close");
}

// Rewrites an absolute path in place without ".", ".." and repeated slashes.
static void normalize(char* path) {
  char* out = path;
  const char* in = path;
  while (*in != '\0') {
    while (*in == '/') ++in;
    const char* end = strchrnul(in, '/');
    size_t n = (size_t)(end - in);
    if (n == 0 || (n == 1 && in[0] == '.')) {
      in = end;
      continue;
    }
    if (n == 2 && in[0] == '.' && in[1] == '.') {
      while (out > path && *--out != '/') {
      }
      in = end;
      continue;
    }
    *out++ = '/';
    memmove(out, in, n);
    out += n;
    in = end;
  }
  if (out == path) *out++ = '/';
  *out = '\0';
}

// The path of `name` (relative to `dirfd`) relative to the folder, in `rel`; 0 when outside.
static int relative_path(int dirfd, const char* name, char* rel) {
  if (!enabled || name == NULL) return 0;
  char full[PATH_MAX * 2];
  if (name[0] == '/') {
    snprintf(full, sizeof full, "%s", name);
  } else {
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      if (getcwd(base, sizeof base) == NULL) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof base - 1);
      if (n <= 0) return 0;
      base[n] = '\0';
    }
    snprintf(full, sizeof full, "%s/%s", base, name);
  }
  normalize(full);
  const char* roots[2] = {root, root2};
  for (int i = 0; i < 2; ++i) {
    size_t n = strlen(roots[i]);
    if (n == 0 || strncmp(full, roots[i], n) != 0) continue;
    if (full[n] == '\0') return rel[0] = '\0', 1;
    if (full[n] == '/') return snprintf(rel, PATH_MAX, "%s", full + n + 1), 1;
  }
  return 0;
}

static int ignored(const char* rel) {
  const char* slash = strrchr(rel, '/');
  return strcmp(slash ? slash + 1 : rel, "lock.mdb") == 0;
}

static void write_fully(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = real.write(log_fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "io_recorder: cannot write the log: %s\n", strerror(errno));
      abort();  // a log with a hole would make every later check wrong
    }
    data += n;
    size -= (size_t)n;
  }
}

// Appends one record; `iov` holds the written bytes (`data_len` of them in all). Mutex held.
static void append(uint8_t op, uint8_t flags, uint64_t ino, uint64_t offset, const char* path,
                   const char* path2, const struct iovec* iov, int iovcnt, size_t data_len) {
  struct io_log_header h = {0};
  h.op = op;
  h.flags = flags;
  h.ino = ino;
  h.offset = offset;
  h.path_len = path ? (uint32_t)strlen(path) : 0;
  h.path2_len = path2 ? (uint32_t)strlen(path2) : 0;
  size_t size = sizeof h + h.path_len + h.path2_len + data_len;
  h.size = (uint32_t)size;
  if (size > buffer_size) {
    buffer = realloc(buffer, size);
    if (buffer == NULL) abort();
    buffer_size = size;
  }
  char* out = buffer;
  memcpy(out, &h, sizeof h);
  out += sizeof h;
  if (h.path_len) memcpy(out, path, h.path_len), out += h.path_len;
  if (h.path2_len) memcpy(out, path2, h.path2_len), out += h.path2_len;
  for (int i = 0; i < iovcnt && data_len > 0; ++i) {
    size_t n = iov[i].iov_len < data_len ? iov[i].iov_len : data_len;
    memcpy(out, iov[i].iov_base, n);
    out += n;
    data_len -= n;
  }
  write_fully(buffer, size);
}

static void append_simple(uint8_t op, uint64_t ino, uint64_t offset, const char* path,
                          const char* path2) {
  append(op, 0, ino, offset, path, path2, NULL, 0, 0);
}

__attribute__((constructor(101))) static void start(void) {
  resolve_real();
  const char* dir = getenv("WARREN_IO_ROOT");
  const char* log = getenv("WARREN_IO_LOG");
  struct stat st;
  if (dir == NULL || log == NULL || dir[0] != '/' || stat(dir, &st) != 0) return;
  snprintf(root, sizeof root, "%s", dir);
  normalize(root);
  if (realpath(dir, root2) == NULL || strcmp(root, root2) == 0) root2[0] = '\0';
  log_fd = real.openat(AT_FDCWD, log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    fprintf(stderr, "io_recorder: cannot open %s: %s\n", log, strerror(errno));
    return;
  }
  append_simple(op_root, (uint64_t)st.st_ino, 0, NULL, NULL);
  enabled = 1;
}

static struct fd_info* info_of(int fd) {
  return fd >= 0 && fd < max_fds && fds[fd].kind != kind_none ? &fds[fd] : NULL;
}

// The fd's entry if it still names the file it was opened on (a folder fd closed by closedir,
// which this shim does not see, may have been reused since). Mutex held.
static struct fd_info* checked_info(int fd, struct stat* st) {
  struct fd_info* info = info_of(fd);
  if (info == NULL) return NULL;
  if (fstat(fd, st) == 0 && (uint64_t)st->st_ino == info->ino) return info;
  info->kind = kind_none;
  return NULL;
}

static int needs_mode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

// Records what the open did (creation, truncation) and remembers the fd. Mutex held.
static void after_open(int fd, const char* rel, int flags, int existed) {
  struct stat st;
  if (fstat(fd, &st) != 0 || fd >= max_fds) return;
  int writable = (flags & O_ACCMODE) != O_RDONLY;
  if (!existed && S_ISREG(st.st_mode)) append_simple(op_create, st.st_ino, 0, rel, NULL);
  if (existed && writable && (flags & O_TRUNC) && S_ISREG(st.st_mode))
    append_simple(op_truncate, st.st_ino, 0, NULL, NULL);
  if (!writable && !S_ISDIR(st.st_mode)) return;  // read-only files change nothing
  struct fd_info info = {(uint64_t)st.st_ino, S_ISDIR(st.st_mode) ? kind_dir : kind_file,
                         (uint8_t)writable, (flags & O_DSYNC) != 0, (flags & O_APPEND) != 0};
  fds[fd] = info;
}

static int do_open(int dirfd, const char* path, int flags, mode_t mode) {
  resolve_real();
  char rel[PATH_MAX];
  if ((flags & O_TMPFILE) == O_TMPFILE || !relative_path(dirfd, path, rel) || ignored(rel))
    return real.openat(dirfd, path, flags, mode);
  pthread_mutex_lock(&mutex);
  struct stat st;
  int existed = !(flags & O_CREAT) || fstatat(dirfd, path, &st, 0) == 0;
  int fd = real.openat(dirfd, path, flags, mode);
  int err = errno;
  if (fd >= 0) after_open(fd, rel, flags, existed);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return fd;
}

#define MODE_ARG(flags)             \
  mode_t mode = 0;                  \
  if (needs_mode(flags)) {          \
    va_list ap;                     \
    va_start(ap, flags);            \
    mode = (mode_t)va_arg(ap, int); \
    va_end(ap);                     \
  }

int open(const char* path, int flags, ...) {
  MODE_ARG(flags);
  return do_open(AT_FDCWD, path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  MODE_ARG(flags);
  return do_open(AT_FDCWD, path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags);
  return do_open(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags);
  return do_open(dirfd, path, flags, mode);
}
// The _FORTIFY_SOURCE entry points (never with O_CREAT: those take the mode).
int __open_2(const char* path, int flags) {
  return do_open(AT_FDCWD, path, flags, 0);
}
int __open64_2(const char* path, int flags) {
  return do_open(AT_FDCWD, path, flags, 0);
}
int __openat_2(int dirfd, const char* path, int flags) {
  return do_open(dirfd, path, flags, 0);
}
int creat(const char* path, mode_t mode) {
  return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
int creat64(const char* path, mode_t mode) {
  return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int close(int fd) {
  resolve_real();
  if (info_of(fd) != NULL) {
    pthread_mutex_lock(&mutex);
    fds[fd].kind = kind_none;  // before the real close: the number may be reused at once
    pthread_mutex_unlock(&mutex);
  }
  return real.close(fd);
}

// Where a write or writev without an offset lands. Mutex held.
static off_t current_offset(int fd, const struct fd_info* info, const struct stat* st) {
  return info->append ? st->st_size : lseek(fd, 0, SEEK_CUR);
}

// A write to a recorded fd: `offset` < 0 means "the fd's own position".
static ssize_t recorded_write(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  pthread_mutex_lock(&mutex);
  struct stat st;
  struct fd_info* info = checked_info(fd, &st);
  off_t at = offset >= 0 ? offset : (info ? current_offset(fd, info, &st) : 0);
  ssize_t n = offset >= 0 ? real.pwritev(fd, iov, iovcnt, offset) : real.writev(fd, iov, iovcnt);
  int err = errno;
  if (n > 0 && info != NULL)
    append(op_write, info->dsync, info->ino, (uint64_t)at, NULL, NULL, iov, iovcnt, (size_t)n);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return n;
}

static int recorded(int fd) {
  resolve_real();
  struct fd_info* info = info_of(fd);
  return info != NULL && info->writable;
}

ssize_t write(int fd, const void* data, size_t size) {
  if (!recorded(fd)) return real.write(fd, data, size);
  struct iovec iov = {(void*)data, size};
  return recorded_write(fd, &iov, 1, -1);
}
ssize_t pwrite(int fd, const void* data, size_t size, off_t offset) {
  if (!recorded(fd) || offset < 0) return real.pwrite(fd, data, size, offset);
  struct iovec iov = {(void*)data, size};
  return recorded_write(fd, &iov, 1, offset);
}
ssize_t pwrite64(int fd, const void* data, size_t size, off_t offset) {
  return pwrite(fd, data, size, offset);
}
ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  if (!recorded(fd)) return real.writev(fd, iov, iovcnt);
  return recorded_write(fd, iov, iovcnt, -1);
}
ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  if (!recorded(fd) || offset < 0) return real.pwritev(fd, iov, iovcnt, offset);
  return recorded_write(fd, iov, iovcnt, offset);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return pwritev(fd, iov, iovcnt, offset);
}

int ftruncate(int fd, off_t size) {
  resolve_real();
  struct fd_info* info = info_of(fd);
  if (info == NULL) return real.ftruncate(fd, size);
  pthread_mutex_lock(&mutex);
  struct stat st;
  info = checked_info(fd, &st);
  int rc = real.ftruncate(fd, size);
  int err = errno;
  if (rc == 0 && info != NULL) append_simple(op_truncate, info->ino, (uint64_t)size, NULL, NULL);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}
int ftruncate64(int fd, off_t size) {
  return ftruncate(fd, size);
}

int truncate(const char* path, off_t size) {
  resolve_real();
  char rel[PATH_MAX];
  if (!relative_path(AT_FDCWD, path, rel) || ignored(rel)) return real.truncate(path, size);
  pthread_mutex_lock(&mutex);
  int rc = real.truncate(path, size);
  int err = errno;
  struct stat st;
  if (rc == 0 && stat(path, &st) == 0)
    append_simple(op_truncate, st.st_ino, (uint64_t)size, NULL, NULL);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}
int truncate64(const char* path, off_t size) {
  return truncate(path, size);
}

static int do_sync(int fd, int (*sync)(int)) {
  resolve_real();
  if (info_of(fd) == NULL) return sync(fd);
  pthread_mutex_lock(&mutex);
  struct stat st;
  struct fd_info* info = checked_info(fd, &st);
  int rc = sync(fd);
  int err = errno;
  if (rc == 0 && info != NULL) append_simple(op_sync, info->ino, 0, NULL, NULL);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}

int fsync(int fd) {
  resolve_real();
  return do_sync(fd, real.fsync);
}
int fdatasync(int fd) {
  resolve_real();
  return do_sync(fd, real.fdatasync);
}

int renameat(int from_dir, const char* from, int to_dir, const char* to) {
  resolve_real();
  char rel_from[PATH_MAX], rel_to[PATH_MAX];
  int in_from = relative_path(from_dir, from, rel_from);
  int in_to = relative_path(to_dir, to, rel_to);
  if (!in_from && !in_to) return real.renameat(from_dir, from, to_dir, to);
  pthread_mutex_lock(&mutex);
  int rc = real.renameat(from_dir, from, to_dir, to);
  int err = errno;
  if (rc == 0 && in_from && in_to) append_simple(op_rename, 0, 0, rel_from, rel_to);
  if (rc == 0 && in_from && !in_to) append_simple(op_unlink, 0, 0, rel_from, NULL);
  if (rc == 0 && !in_from && in_to)  // its content is unknown: say so instead of guessing
    fprintf(stderr, "io_recorder: %s moved in from outside; not recorded\n", rel_to);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}
int rename(const char* from, const char* to) {
  return renameat(AT_FDCWD, from, AT_FDCWD, to);
}

int unlinkat(int dirfd, const char* path, int flags) {
  resolve_real();
  char rel[PATH_MAX];
  if (!relative_path(dirfd, path, rel) || ignored(rel)) return real.unlinkat(dirfd, path, flags);
  pthread_mutex_lock(&mutex);
  int rc = real.unlinkat(dirfd, path, flags);
  int err = errno;
  if (rc == 0) append_simple((flags & AT_REMOVEDIR) ? op_rmdir : op_unlink, 0, 0, rel, NULL);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}
int unlink(const char* path) {
  return unlinkat(AT_FDCWD, path, 0);
}
int rmdir(const char* path) {
  return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}
// glibc's remove() calls unlink and rmdir internally, out of this shim's reach.
int remove(const char* path) {
  resolve_real();
  char rel[PATH_MAX];
  if (!relative_path(AT_FDCWD, path, rel)) return real.remove(path);
  struct stat st;
  int dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
  return unlinkat(AT_FDCWD, path, dir ? AT_REMOVEDIR : 0);
}

int mkdirat(int dirfd, const char* path, mode_t mode) {
  resolve_real();
  char rel[PATH_MAX];
  if (!relative_path(dirfd, path, rel)) return real.mkdirat(dirfd, path, mode);
  pthread_mutex_lock(&mutex);
  int rc = real.mkdirat(dirfd, path, mode);
  int err = errno;
  struct stat st;
  if (rc == 0 && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
    append_simple(op_mkdir, st.st_ino, 0, rel, NULL);
  pthread_mutex_unlock(&mutex);
  errno = err;
  return rc;
}
int mkdir(const char* path, mode_t mode) {
  return mkdirat(AT_FDCWD, path, mode);
}
