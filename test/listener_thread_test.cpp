// The listener shared by the front doors, with a serve function of the test's own over real
// loopback sockets: what it does when serving a connection fails.
#include "net/listener_thread.hpp"
#include "raw_socket.hpp"

#include <poll.h>
#include <unistd.h>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <stdexcept>
#include <string>

using namespace warren;

namespace {

// What the listener sent on `fd` before closing it, waiting at most the guard time (30 s, not
// a speed expectation).
std::string read_until_closed(int fd) {
  std::string got;
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 30000) == 1) {
    auto n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_connection_that_cannot_be_served_leaves_the_door_open) {
  std::atomic<int> served{0};
  net::listener_thread listener("test");
  auto port = listener.start("127.0.0.1", 0, [&](const net::loop_context&) {
    return [&](kj::Own<kj::AsyncIoStream> stream, const net::peer_address&) -> kj::Promise<void> {
      if (served++ == 0) throw std::runtime_error("this session cannot start");
      auto& s = *stream;
      return s.write("served", 6).attach(kj::mv(stream));
    };
  });
  int first = test::idle_socket(port);
  BOOST_REQUIRE(first >= 0);
  BOOST_TEST(read_until_closed(first).empty());  // dropped, not served
  close(first);
  int second = test::idle_socket(port);
  BOOST_REQUIRE(second >= 0);
  BOOST_TEST(read_until_closed(second) == "served");
  close(second);
  BOOST_TEST(served.load() == 2);
}
