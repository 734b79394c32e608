// AMQP reply codes and their names, shared by the broker and the client library.
#pragma once

#include <cstdint>
#include <string>

namespace warren {

enum class reply_code : uint16_t {
  no_route = 312,
  connection_forced = 320,
  access_refused = 403,
  not_found = 404,
  resource_locked = 405,
  precondition_failed = 406,
  frame_error = 501,
  syntax_error = 502,
  command_invalid = 503,
  channel_error = 504,
  unexpected_frame = 505,
  resource_error = 506,
  not_allowed = 530,
  not_implemented = 540,
  internal_error = 541,
};

/// "NOT_FOUND" for reply_code::not_found, and so on.
const char* reply_code_name(reply_code code);

/// Parses a name produced by reply_code_name; false for an unknown name.
bool parse_reply_code_name(const std::string& name, reply_code& out);

}  // namespace warren
