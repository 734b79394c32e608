// Test helpers that run real processes: a warren-node on a free port, and commands (warrenctl)
// with their output captured.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warren::test {

/// An IPv4 address of this machine that is not loopback ("10.0.0.5"), or empty when it has none.
std::string non_loopback_address();

/// A temporary directory, removed with everything in it when destroyed.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A small tmpfs (`size` as mount takes it: "3m") mounted on a fresh temporary directory, for
/// disk-full and disk-alarm tests; unmounted when destroyed. Needs root, as CI and the
/// development machines have; throws std::runtime_error with mount's complaint otherwise.
class tmpfs_mount {
 public:
  explicit tmpfs_mount(const std::string& size);
  ~tmpfs_mount();
  tmpfs_mount(const tmpfs_mount&) = delete;
  tmpfs_mount& operator=(const tmpfs_mount&) = delete;
  const std::string& path() const { return dir_.path(); }

 private:
  temp_dir dir_;
};

/// A warren-node child process listening on a port the OS picked (unless `extra_args` names a
/// --port: a member restarted on the port its clients know), with its data in `data_dir`
/// (a fresh temporary one when empty). Its AMQP listener gets a free port too, unless
/// `extra_args` names one. `prefix` runs before it (e.g. prlimit to set its limits). Stopped
/// (SIGTERM, then SIGKILL if it lingers) when destroyed. The environment variable
/// WARREN_TEST_NODE, when set, names another warren-node binary to run (an older build, to see
/// a new test fail against it). The node is killed when the thread that constructed it ends
/// (PR_SET_PDEATHSIG follows the forking thread), so construct it on a thread that outlives it.
class node_process {
 public:
  explicit node_process(std::vector<std::string> extra_args = {}, std::string data_dir = {},
                        std::vector<std::string> prefix = {});
  ~node_process();

  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  uint16_t port() const { return port_; }
  uint16_t amqp_port() const { return amqp_port_; }
  /// The management HTTP port, picked free unless the test passed --http-port; 0 when off.
  uint16_t http_port() const { return http_port_; }
  uint16_t metrics_port() const { return metrics_port_; }  // 0 when off
  pid_t pid() const { return pid_; }

  /// Everything the node logged so far.
  std::string log() const;

  /// Waits until the node has logged `text` (true), or exited or a minute passed (false): a
  /// guard against hanging, not a speed expectation.
  bool wait_for_log(const std::string& text);

  /// True while the process has not exited.
  bool alive();

  /// SIGTERM and wait; returns the exit status as waitpid reports it.
  int stop();

  /// SIGKILL, as a crash would; returns once the process is gone.
  void kill9();

  const std::string& data_dir() const { return data_dir_; }

 private:
  std::unique_ptr<temp_dir> own_dir_;
  std::string data_dir_;
  void read_log(int fd);
  bool launch(const std::vector<std::string>& argv);  // false when it did not become ready

  pid_t pid_ = -1;
  uint16_t port_ = 0;
  uint16_t amqp_port_ = 0;
  uint16_t http_port_ = 0;
  uint16_t metrics_port_ = 0;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string log_;
  bool eof_ = false;
  bool reaped_ = false;
  int status_ = 0;
};

struct command_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// A TCP port on 127.0.0.1 that was free a moment ago, outside the kernel's ephemeral range.
uint16_t free_port();

/// The warren-node binary the tests run (see node_process).
std::string node_binary();

/// Runs `argv` to completion, feeding `input` to its standard input.
command_result run_command(const std::vector<std::string>& argv, const std::string& input = {});

/// Starts `argv` with stdout to a pipe and returns its pid; `out_fd` receives the read end.
pid_t spawn_command(const std::vector<std::string>& argv, int& out_fd);

}  // namespace warren::test
