// client_link: how a connection actor talks back to its network front door.
//
// The front door (Cap'n Proto today, AMQP 0-9-1 later) implements this interface. Every method
// is called from a CAF worker thread, must not block, and must be safe to call after the client
// has gone (then it does nothing). The front door sends requests to the connection actor as
// messages carrying a request id; answers come back through reply() with that id.
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/delivery.hpp"
#include "actors/common/request_answer.hpp"

#include <caf/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

class client_link {
 public:
  virtual ~client_link() = default;

  /// Answers request `request`: `error` is set on failure, else `answer` holds the answer.
  virtual void reply(uint64_t request, caf::error error, request_answer answer) = 0;

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
