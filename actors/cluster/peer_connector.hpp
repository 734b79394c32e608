// One peer address's connector. CAF 0.17's middleman actor connects with a blocking connect()
// (and, with TLS, a blocking handshake) on its own thread: to a host that drops packets, as a
// cut link or a powered-off machine does, that takes the kernel's SYN retries, about two
// minutes. Through one shared middleman actor every other connect, and the publishing of the
// cluster port at start-up, waited behind it: a member restarted while another was cut off
// did not open its ports for minutes. So each peer address gets a middleman actor of its own,
// behind this actor, which answers a connect asked while one is still under way at once
// ("still connecting") instead of queueing another two-minute wait behind it. Each connect is
// preceded by a bounded probe (tcp_probe.hpp): a host that drops packets is reported within
// seconds, naming that, and no thread is left in a two-minute connect to hold up the shutdown.
// CAF then connects to the address that answered (no second lookup). A host that falls silent in
// the moment between the two still blocks CAF's connect: doing the connect ourselves would mean
// CAF's OpenSSL session internals, which 0.17 does not expose.
#pragma once

#include <caf/all.hpp>
#include <caf/io/middleman_actor.hpp>

namespace warren {

/// Answers `(connect_atom, host, port)` as CAF's middleman actor does, through `through` (its
/// own middleman actor, which it stops when it ends).
caf::behavior peer_connector(caf::event_based_actor* self, caf::io::middleman_actor through);

}  // namespace warren
