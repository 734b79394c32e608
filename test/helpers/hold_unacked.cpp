// Test helper: consumes a queue with manual acks and never acks. Prints one line per delivery
// and then waits to be killed, so tests can check what happens to messages held by a client
// that vanishes without closing.
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: hold_unacked PORT QUEUE PREFETCH\n";
    return 2;
  }
  warren::client::connect_options o;
  o.port = static_cast<uint16_t>(std::stoi(argv[1]));
  o.client_name = "hold_unacked";
  auto conn = warren::client::connection::open(o);
  auto ch = conn->open_channel();
  warren::client::consume_options c;
  c.prefetch = static_cast<uint32_t>(std::stoul(argv[3]));
  ch->consume(argv[2], c,
              [](const warren::client::delivery& d) { std::cout << d.body << std::endl; });
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
