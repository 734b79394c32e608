#include "actors/cluster/tcp_probe.hpp"

#include "actors/common/broker_error.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace warren {

namespace {

using clock = std::chrono::steady_clock;

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

// Empty when one non-blocking connect to `addr` completed before `deadline`.
std::string try_address(const addrinfo& addr, clock::time_point deadline) {
  fd_closer s{
      ::socket(addr.ai_family, addr.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, addr.ai_protocol)};
  if (s.fd < 0) return std::strerror(errno);
  if (::connect(s.fd, addr.ai_addr, addr.ai_addrlen) == 0) return {};
  if (errno != EINPROGRESS) return std::strerror(errno);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return "no answer";
    pollfd p{s.fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    if (n == 0) return "no answer";
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return std::strerror(errno);
    return err == 0 ? std::string{} : std::strerror(err);
  }
}

// The numeric form of `addr` (no lookup).
std::string numeric(const addrinfo& addr) {
  char host[NI_MAXHOST];
  if (::getnameinfo(addr.ai_addr, addr.ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST) !=
      0)
    return {};
  return host;
}

}  // namespace

tcp_probe_result probe_tcp(const std::string& host, uint16_t port,
                           std::chrono::milliseconds limit) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  auto service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return {{}, "cannot resolve " + host + ": " + ::gai_strerror(rc)};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list{found, &::freeaddrinfo};
  int left = 0;
  for (auto* a = found; a != nullptr; a = a->ai_next) ++left;
  auto deadline = clock::now() + limit;
  std::string why = "no address";
  for (auto* a = found; a != nullptr; a = a->ai_next, --left) {
    auto share = (deadline - clock::now()) / left;
    why = try_address(*a, clock::now() + share);
    if (why.empty()) return {numeric(*a), {}};
  }
  if (why == "no answer")
    why += " within " + std::to_string(limit.count()) + " ms (a host that drops packets, or down)";
  return {{}, why};
}

caf::behavior tcp_probe(caf::event_based_actor* self, std::chrono::milliseconds limit) {
  return {
      [=](caf::connect_atom, const std::string& host, uint16_t port) -> caf::result<std::string> {
        self->quit();
        auto found = probe_tcp(host, port, limit);
        if (!found.error.empty())
          return make_broker_error(reply_code::resource_error,
                                   host + ":" + std::to_string(port) + ": " + found.error);
        return found.address.empty() ? host : found.address;
      },
  };
}

}  // namespace warren
