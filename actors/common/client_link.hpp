// client_link: how a connection actor talks back to its network front door.
//
// The front door (Cap'n Proto today, AMQP 0-9-1 later) implements this interface. Every method
// is called from a CAF worker thread, must not block, and must be safe to call after the client
// has gone (then it does nothing). The front door sends requests to the connection actor as
// messages carrying a request id; answers come back through reply() with that id.
#pragma once

#include "actors/common/broker_error.hpp"
#include "core/message.hpp"
#include "core/outcomes.hpp"

#include <caf/error.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

/// A message as one client receives it: channel-scoped tag, redelivered flag, shared message.
struct delivery {
  uint64_t tag = 0;  // 0 for a no-ack get
  bool redelivered = false;
  message_ptr msg;
  uint32_t message_count = 0;  // get only: ready messages left
  int64_t stream_offset = -1;  // its offset, for a message of a stream
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delivery& x) {
  return f(x.tag, x.redelivered, x.msg, x.message_count, x.stream_offset);
}

class client_link {
 public:
  virtual ~client_link() = default;

  /// Answers request `request`: `error` is set on failure, else `result` holds the answer.
  virtual void reply(uint64_t request, caf::error error, caf::message result) = 0;

  virtual void deliver(uint16_t channel, const std::string& consumer_tag,
                       std::vector<delivery> batch) = 0;

  virtual void consumer_cancelled(uint16_t channel, const std::string& consumer_tag,
                                  const std::string& reason) = 0;

  /// The broker closed a channel because of an error. `serial` says which opening of that
  /// channel number it was (the connection's count of channel opens, from 1), so a front door
  /// can tell a closed channel from one the client opened again under the same number.
  virtual void channel_closed(uint16_t channel, uint64_t serial, const broker_failure& reason) = 0;

  /// The broker closed the connection (vhost deleted, node stopping).
  virtual void connection_closed(const broker_failure& reason) = 0;
};

}  // namespace warren
