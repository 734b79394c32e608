// Broker errors: an AMQP reply code plus a text naming what was wrong.
//
// Inside the actor system an error travels as a caf::error of category "warren" whose context
// holds (uint16 code, std::string text). At the network boundary it becomes "CODE_NAME: text".
// CAF's own errors (an actor that went away mid-request) map to INTERNAL_ERROR / NOT_FOUND.
#pragma once

#include "core/reply_code.hpp"

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace warren {

/// Channel errors close one channel; the others close the whole connection (AMQP rules).
bool is_channel_error(reply_code code);

struct broker_failure {
  reply_code code = reply_code::internal_error;
  std::string text;
};

/// "NOT_FOUND: no queue 'q' in vhost '/'".
std::string to_string(const broker_failure& f);

caf::error make_broker_error(reply_code code, std::string text);

/// Recovers code and text from any caf::error, including CAF's own.
broker_failure describe(const caf::error& err);

}  // namespace warren
