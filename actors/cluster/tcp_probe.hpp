// tcp_probe: whether a peer address accepts a TCP connection, found out within a bound. CAF 0.17
// connects with a blocking connect() that waits out the kernel's SYN retries (about two
// minutes) when the host drops packets; its thread holds the node's shutdown for as long. A probe
// with a deadline goes first, so that CAF's connect only ever meets a host that just answered.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace warren {

/// What a probe found: the numeric address (as getnameinfo writes it) that accepted a TCP
/// connection, or, when none did, why not ("Connection refused", "no answer within 3000 ms").
struct tcp_probe_result {
  std::string address;
  std::string error;
};

/// Resolves `host` once and tries its addresses in turn, each with an equal share of what is
/// left of `limit` (a dual-stack host whose IPv6 path drops packets is still reached over IPv4);
/// the connection made is closed at once. The lookup's own time is the resolver's. Blocks.
tcp_probe_result probe_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds limit);

/// A detached actor that answers one `(connect_atom, host, port)` with the address that
/// answered (connect to that one, not `host` again: another lookup may order them otherwise),
/// or an error naming why none did, and ends.
caf::behavior tcp_probe(caf::event_based_actor* self, std::chrono::milliseconds limit);

}  // namespace warren
