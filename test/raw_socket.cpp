#include "raw_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace warren::test {

int idle_socket(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool closed_by_node(int fd) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    if (poll(&p, 1, 30000) != 1) return false;
    char buf[512];
    auto n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
  }
}

}  // namespace warren::test
