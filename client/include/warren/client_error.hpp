// warren::client::error: what a broker call failed with. code() is the reply code name the
// broker sent ("NOT_FOUND", "PRECONDITION_FAILED", ...), or "DISCONNECTED" when the connection
// to the node was lost, or "INTERNAL_ERROR" for anything unexpected; kind() is the same as an
// enum (broker.capnp's ErrorCode, plus disconnected).
#pragma once

#include <stdexcept>
#include <string>

namespace kj {
class Exception;
}

namespace warren::client {

enum class error_code {
  internal_error,
  connection_forced,
  access_refused,
  not_found,
  resource_locked,
  precondition_failed,
  frame_error,
  syntax_error,
  command_invalid,
  channel_error,
  unexpected_frame,
  resource_error,
  not_allowed,
  not_implemented,
  no_route,
  disconnected,  // the network connection to the node went away
};

class error : public std::runtime_error {
 public:
  error(std::string code, std::string text);

  const std::string& code() const { return code_; }
  const std::string& text() const { return text_; }
  error_code kind() const { return kind_; }

 private:
  std::string code_;
  std::string text_;
  error_code kind_;
};

/// The error_code of a code name ("NOT_FOUND", "DISCONNECTED"); internal_error for others.
error_code error_code_of(const std::string& code);

/// Turns a Cap'n Proto exception into an error, recovering the broker's "CODE: text" format.
error from_exception(const kj::Exception& e);

}  // namespace warren::client
