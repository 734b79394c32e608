// Plain TCP sockets for tests that watch what the node does with connections that say nothing.
#pragma once

#include <cstdint>

namespace warren::test {

/// A TCP connection to 127.0.0.1:`port` that sends nothing; -1 when connect failed.
int idle_socket(uint16_t port);

/// True once the node closed `fd` (read returns 0 or an error), skipping anything it wrote
/// first; false if it stays open for the guard time (30 s, not a speed expectation).
bool closed_by_node(int fd);

}  // namespace warren::test
