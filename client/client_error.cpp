#include "warren/client_error.hpp"

#include "core/reply_code.hpp"
#include "transport/remote_error.hpp"

#include <kj/exception.h>

namespace warren::client {

error_code error_code_of(const std::string& code) {
  if (code == "DISCONNECTED") return error_code::disconnected;
  reply_code parsed;
  if (!parse_reply_code_name(code, parsed)) return error_code::internal_error;
  switch (parsed) {
    case reply_code::no_route:
      return error_code::no_route;
    case reply_code::connection_forced:
      return error_code::connection_forced;
    case reply_code::access_refused:
      return error_code::access_refused;
    case reply_code::not_found:
      return error_code::not_found;
    case reply_code::resource_locked:
      return error_code::resource_locked;
    case reply_code::precondition_failed:
      return error_code::precondition_failed;
    case reply_code::frame_error:
      return error_code::frame_error;
    case reply_code::syntax_error:
      return error_code::syntax_error;
    case reply_code::command_invalid:
      return error_code::command_invalid;
    case reply_code::channel_error:
      return error_code::channel_error;
    case reply_code::unexpected_frame:
      return error_code::unexpected_frame;
    case reply_code::resource_error:
      return error_code::resource_error;
    case reply_code::not_allowed:
      return error_code::not_allowed;
    case reply_code::not_implemented:
      return error_code::not_implemented;
    case reply_code::internal_error:
      return error_code::internal_error;
  }
  return error_code::internal_error;
}

error::error(std::string code, std::string text)
    : std::runtime_error(code + ": " + text),
      code_(std::move(code)),
      text_(std::move(text)),
      kind_(error_code_of(code_)) {}

// The broker's description is "CODE: text" (broker.capnp, ERRORS); Cap'n Proto's C++ runtime
// puts "remote exception: " ahead of descriptions that came over the network.
error from_exception(const kj::Exception& e) {
  if (e.getType() == kj::Exception::Type::DISCONNECTED)
    return error("DISCONNECTED", "lost the connection to the broker (" +
                                     std::string(e.getDescription().cStr()) + ")");
  auto description = transport::remote_description(e);
  auto colon = description.find(": ");
  reply_code parsed;
  if (colon != std::string::npos && parse_reply_code_name(description.substr(0, colon), parsed))
    return error(description.substr(0, colon), description.substr(colon + 2));
  return error("INTERNAL_ERROR", description);
}

}  // namespace warren::client
