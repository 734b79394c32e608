// What every call on a channel shares (private to the client): the capability check, acks
// gathered ahead of a call, and settle failures kept for the next call that waits. channel.cpp
// defines them; channel_publish.cpp and channel_consume.cpp use them too.
#pragma once

#include "client/client_state.hpp"

#include <kj/async.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace warren::client {

/// The channel's capability; throws when the channel is closed, or the settle failure kept for
/// this call (kj thread).
rpc::Channel::Client& cap_of(const std::shared_ptr<channel::state>& st);

/// Settling does not wait for the broker: a settle it refused (an unknown tag) is kept and
/// thrown by the next call that waits (see cap_of). The channel stays open.
kj::Promise<void> noting_failure(const std::shared_ptr<channel::state>& st,
                                 kj::Promise<void> settle);

/// The single acks gathered so far, leaving none.
std::vector<uint64_t> take_acks(channel::state& st);

/// Sends gathered single acks, in the order they were made (kj thread).
kj::Promise<void> send_acks(const std::shared_ptr<channel::state>& st,
                            const std::vector<uint64_t>& tags);

/// Waits for two calls that are both on the wire already, the first one first.
kj::Promise<void> both(kj::Promise<void> first, kj::Promise<void> second);

}  // namespace warren::client
