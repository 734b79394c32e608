#include "subprocess.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <utility>

namespace warren::test {

std::string non_loopback_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string found;
  for (auto* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) found = text;
  }
  freeifaddrs(list);
  return found;
}

namespace {

std::vector<char*> c_args(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// A node that did not stop on SIGTERM: where its threads wait goes to the test's output, which
// is what the reader of a failed CI run needs, when gdb is there to tell.
void print_stacks_of(pid_t pid) {
  if (::access("/usr/bin/gdb", X_OK) != 0) return;
  auto r = run_command({"/usr/bin/timeout", "60", "/usr/bin/gdb", "-p", std::to_string(pid),
                        "-batch", "-ex", "thread apply all bt"});
  std::cerr << "node " << pid << " did not stop within 30 s of SIGTERM; its threads:\n"
            << r.out << r.err << std::endl;
}

}  // namespace

temp_dir::temp_dir() {
  char pattern[] = "/tmp/warren-test-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

tmpfs_mount::tmpfs_mount(const std::string& size) {
  auto r = run_command({"/usr/bin/mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path()});
  if (r.exit_code != 0) throw std::runtime_error("cannot mount a tmpfs: " + r.err);
}

tmpfs_mount::~tmpfs_mount() {
  run_command({"/usr/bin/umount", "-l", path()});
}

std::string node_binary() {
  const char* other = std::getenv("WARREN_TEST_NODE");
  return other != nullptr && *other != 0 ? other : WARREN_NODE_PATH;
}

node_process::node_process(std::vector<std::string> extra_args, std::string data_dir,
                           std::vector<std::string> prefix) {
  if (data_dir.empty()) {
    own_dir_ = std::make_unique<temp_dir>();
    data_dir = own_dir_->path();
  }
  data_dir_ = data_dir;
  auto given = [&](const char* flag) {
    return std::find(extra_args.begin(), extra_args.end(), flag) != extra_args.end();
  };
  bool pick_amqp_port = !given("--amqp-port"), pick_http_port = !given("--http-port");
  bool pick_metrics_port = !given("--metrics-port");
  // A port that was free when picked can be taken by another test's node before ours binds it:
  // then pick another.
  for (int attempt = 1;; ++attempt) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {node_binary(), "--log-level", "info", "--data-dir", data_dir_});
    if (!given("--port")) argv.insert(argv.end(), {"--port", "0"});
    if (pick_amqp_port) {
      argv.push_back("--amqp-port");
      argv.push_back(std::to_string(free_port()));
    }
    if (pick_http_port) {
      argv.push_back("--http-port");
      argv.push_back(std::to_string(free_port()));
    }
    if (pick_metrics_port) {
      argv.push_back("--metrics-port");
      argv.push_back(std::to_string(free_port()));
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    if (launch(argv)) return;
    bool port_taken = (pick_amqp_port && log().find("(AMQP)") != std::string::npos) ||
                      (pick_http_port && log().find("(HTTP)") != std::string::npos) ||
                      (pick_metrics_port && log().find("(metrics)") != std::string::npos);
    stop();
    if (reader_.joinable()) reader_.join();  // a thrown constructor must not leave it running
    if (!port_taken || attempt == 5)
      throw std::runtime_error("warren-node did not start; it logged:\n" + log());
    // Said, because a test reading the log afterwards sees only the last attempt's lines.
    std::cerr << "node_process: a picked port was taken; starting warren-node again (attempt "
              << attempt + 1 << ")\n";
    std::lock_guard<std::mutex> guard(mutex_);
    log_.clear();
    eof_ = false;
    reaped_ = false;
  }
}

bool node_process::launch(const std::vector<std::string>& argv) {
  // Close-on-exec: a node forked meanwhile from another thread must not inherit this pipe's write
  // end, or this node's log reader never sees the end of it (a test waited forever on that).
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  // Built before fork: the child of a threaded process may only make async-signal-safe calls
  // (another thread may hold the allocator's lock at the moment of the fork).
  auto args = c_args(argv);
  pid_ = fork();
  if (pid_ == 0) {
    // The node must not outlive a test that crashes, nor hold the test runner's output pipe.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(err_pipe[1], STDERR_FILENO);
    dup2(err_pipe[1], STDOUT_FILENO);
    close(err_pipe[0]);
    close(err_pipe[1]);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err_pipe[1]);
  reader_ = std::thread([this, fd = err_pipe[0]] { read_log(fd); });
  std::unique_lock<std::mutex> lock(mutex_);
  // A generous guard against a node that never starts; not a speed expectation.
  bool ready = changed_.wait_for(lock, std::chrono::seconds(60), [this] {
    return eof_ || log_.find("warren-node ready on") != std::string::npos;
  });
  std::smatch m;
  static const std::regex ready_line("warren-node ready on [^:]+:([0-9]+)");
  if (!ready || !std::regex_search(log_, m, ready_line)) {
    lock.unlock();
    ::kill(pid_, SIGKILL);
    return false;
  }
  port_ = static_cast<uint16_t>(std::stoi(m[1]));
  static const std::regex amqp_line("AMQP 0-9-1 listener on [^:]+:([0-9]+)");
  if (std::regex_search(log_, m, amqp_line)) amqp_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  static const std::regex http_line("management HTTP listener on [^:]+:([0-9]+)");
  if (std::regex_search(log_, m, http_line)) http_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  static const std::regex metrics_line("Prometheus metrics listener on [^:]+:([0-9]+)");
  if (std::regex_search(log_, m, metrics_line))
    metrics_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  return true;
}

namespace {

bool bindable_on_loopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Ports outside the kernel's ephemeral range (the ports it hands out for outgoing connections
// and bind(0)): below it when there is room, else above it.
std::pair<int, int> non_ephemeral_ports() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  range >> low >> high;
  if (low > 11000) return {10000, low - 1};
  if (high < 64000) return {high + 1, 65535};
  return {10000, 32767};  // no room on either side: ports may collide, and node_process retries
}

}  // namespace

uint16_t free_port() {
  // Tests run in parallel, each starting nodes on ports picked here before the node binds them.
  // A port from the kernel's ephemeral range could meanwhile become the local end of some other
  // test's outgoing connection, so pick outside that range, at random so that parallel tests do
  // not walk the same sequence.
  static const auto ports = non_ephemeral_ports();
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  static std::set<uint16_t> handed_out;  // a test may pick several before its nodes bind them
  static std::mutex mutex;
  std::lock_guard<std::mutex> guard(mutex);
  std::uniform_int_distribution<int> pick(ports.first, ports.second);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto port = static_cast<uint16_t>(pick(random));
    if (handed_out.count(port) == 0 && bindable_on_loopback(port)) {
      handed_out.insert(port);
      return port;
    }
  }
  throw std::runtime_error("could not find a free port");
}

node_process::~node_process() {
  stop();
  if (reader_.joinable()) reader_.join();
}

void node_process::read_log(int fd) {
  char buf[4096];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    std::lock_guard<std::mutex> guard(mutex_);
    log_.append(buf, static_cast<size_t>(n));
    changed_.notify_all();
  }
  close(fd);
  std::lock_guard<std::mutex> guard(mutex_);
  eof_ = true;
  changed_.notify_all();
}

bool node_process::wait_for_log(const std::string& text) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::seconds(60), [&] {
    return eof_ || log_.find(text) != std::string::npos;
  }) && log_.find(text) != std::string::npos;
}

std::string node_process::log() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return log_;
}

bool node_process::alive() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

int node_process::stop() {
  if (reaped_ || pid_ <= 0) return status_;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 600 && !reaped_; ++i) {
    if (waitpid(pid_, &status_, WNOHANG) == pid_)
      reaped_ = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!reaped_) {
    print_stacks_of(pid_);
    ::kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  // The process is gone; let the reader take in the last of its output before anyone looks.
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::seconds(10), [&] { return eof_; });
  return status_;
}

void node_process::kill9() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, &status_, 0);
  reaped_ = true;
}

command_result run_command(const std::vector<std::string>& argv, const std::string& input) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  auto args = c_args(argv);  // before fork, as in node_process::launch
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Feed stdin from a thread so a child writing lots of output cannot deadlock us.
  std::thread feeder([fd = in_pipe[1], &input] {
    size_t done = 0;
    while (done < input.size()) {
      auto n = ::write(fd, input.data() + done, input.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  });
  command_result result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      auto n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        sinks[i]->append(buf, static_cast<size_t>(n));
      }
    }
  }
  feeder.join();
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

pid_t spawn_command(const std::vector<std::string>& argv, int& out_fd) {
  int out_pipe[2];
  if (pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
  auto args = c_args(argv);  // before fork, as in node_process::launch
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  out_fd = out_pipe[0];
  return pid;
}

}  // namespace warren::test
