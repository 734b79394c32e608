// An LD_PRELOAD shim that makes a disk fail the way fsyncgate described: once the file named by
// WARREN_FAULT_TRIGGER exists, fsync and fdatasync of any file whose path starts with the
// trigger file's first line fail with EIO (and sync nothing), after waiting the milliseconds its
// optional second line gives (a slow failing disk, which holds a commit open). Before that, and
// for every other file, they pass through. Arming by a file lets a test fail one folder under a
// running node.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

// The path prefix whose syncs fail, and the delay before they do, read from the trigger file;
// false while it is absent.
static int armed_prefix(char* prefix, size_t size, long* delay_ms) {
  const char* trigger = getenv("WARREN_FAULT_TRIGGER");
  prefix[0] = '\0';
  *delay_ms = 0;
  FILE* f = trigger ? fopen(trigger, "r") : NULL;
  if (!f) return 0;
  int ok = fgets(prefix, (int)size, f) != NULL;
  char delay[32];
  if (ok && fgets(delay, sizeof delay, f) != NULL) *delay_ms = strtol(delay, NULL, 10);
  fclose(f);
  prefix[strcspn(prefix, "\n")] = '\0';
  return ok && prefix[0] != '\0';
}

static int should_fail(int fd, long* delay_ms) {
  char prefix[PATH_MAX];
  if (!armed_prefix(prefix, sizeof prefix, delay_ms)) return 0;
  char link[64];
  char path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strncmp(path, prefix, strlen(prefix)) == 0;
}

static int fail_or_call(const char* name, int fd) {
  long delay_ms = 0;
  if (should_fail(fd, &delay_ms)) {
    if (delay_ms > 0) usleep((useconds_t)(delay_ms * 1000));
    errno = EIO;
    return -1;
  }
  sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);
  return real(fd);
}

int fsync(int fd) {
  return fail_or_call("fsync", fd);
}
int fdatasync(int fd) {
  return fail_or_call("fdatasync", fd);
}
