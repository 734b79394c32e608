#include "warren/client_error.hpp"

#include "core/reply_code.hpp"

#include <kj/exception.h>

namespace warren::client {

error::error(std::string code, std::string text)
    : std::runtime_error(code + ": " + text), code_(std::move(code)), text_(std::move(text)) {}

error from_exception(const kj::Exception& e) {
  std::string description = e.getDescription().cStr();
  if (e.getType() == kj::Exception::Type::DISCONNECTED)
    return error("DISCONNECTED", "lost the connection to the broker (" + description + ")");
  // Cap'n Proto may prefix a remote exception ("remote exception: "); find "CODE: " after it.
  for (size_t at = 0; at < description.size();) {
    size_t colon = description.find(": ", at);
    if (colon == std::string::npos) break;
    size_t start = description.rfind(' ', colon);
    start = start == std::string::npos ? 0 : start + 1;
    if (start < at) start = at;
    std::string code = description.substr(start, colon - start);
    reply_code parsed;
    if (parse_reply_code_name(code, parsed)) return error(code, description.substr(colon + 2));
    at = colon + 2;
  }
  return error("INTERNAL_ERROR", description);
}

}  // namespace warren::client
