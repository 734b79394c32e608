// Limits that keep a node up whatever clients do, against real nodes on loopback: running out of
// file descriptors, connections that never finish their handshake, connection churn, and what a
// client may make the node reserve before it has logged in.
#define BOOST_TEST_MODULE limits
#include <boost/test/unit_test.hpp>

#include "amqp_raw_client.hpp"
#include "client/channel.hpp"
#include "client/connection.hpp"
#include "subprocess.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace warren::client;
using warren::test::node_process;
using warren::test::raw_client;

namespace {

// A plain TCP connection that sends nothing; -1 when connect failed.
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

// Retries `attempt` until it returns true; the guard only stops a hung test.
template <class F>
bool eventually(F attempt) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (attempt()) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(both_listeners_accept_again_after_running_out_of_descriptors) {
  node_process node({}, {}, {"/usr/bin/prlimit", "--nofile=64:64", "--"});
  std::vector<int> held;
  for (int i = 0; i < 150; ++i) {
    held.push_back(idle_socket(i % 2 ? node.amqp_port() : node.port()));
  }
  BOOST_TEST(node.wait_for_log("out of file descriptors"));
  for (int fd : held)
    if (fd >= 0) close(fd);
  BOOST_TEST(node.alive());
  BOOST_TEST(eventually([&] {
    raw_client c(node.amqp_port());
    c.handshake();
    return true;
  }));
  BOOST_TEST(eventually([&] {
    connect_options o;
    o.port = node.port();
    return connection::open(o)->list_vhosts().size() == 1;
  }));
}
