// warren::client::error: what a broker call failed with. code() is the reply code name the
// broker sent ("NOT_FOUND", "PRECONDITION_FAILED", ...), or "DISCONNECTED" when the connection
// to the node was lost, or "INTERNAL_ERROR" for anything unexpected.
#pragma once

#include <stdexcept>
#include <string>

namespace kj {
class Exception;
}

namespace warren::client {

class error : public std::runtime_error {
 public:
  error(std::string code, std::string text);

  const std::string& code() const { return code_; }
  const std::string& text() const { return text_; }

 private:
  std::string code_;
  std::string text_;
};

/// Turns a Cap'n Proto exception into an error, recovering the broker's "CODE: text" format.
error from_exception(const kj::Exception& e);

}  // namespace warren::client
