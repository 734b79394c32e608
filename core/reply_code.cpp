#include "core/reply_code.hpp"

namespace warren {

namespace {

struct code_name {
  reply_code code;
  const char* name;
};

constexpr code_name code_names[] = {
    {reply_code::no_route, "NO_ROUTE"},
    {reply_code::connection_forced, "CONNECTION_FORCED"},
    {reply_code::access_refused, "ACCESS_REFUSED"},
    {reply_code::not_found, "NOT_FOUND"},
    {reply_code::resource_locked, "RESOURCE_LOCKED"},
    {reply_code::precondition_failed, "PRECONDITION_FAILED"},
    {reply_code::frame_error, "FRAME_ERROR"},
    {reply_code::syntax_error, "SYNTAX_ERROR"},
    {reply_code::command_invalid, "COMMAND_INVALID"},
    {reply_code::channel_error, "CHANNEL_ERROR"},
    {reply_code::unexpected_frame, "UNEXPECTED_FRAME"},
    {reply_code::resource_error, "RESOURCE_ERROR"},
    {reply_code::not_allowed, "NOT_ALLOWED"},
    {reply_code::not_implemented, "NOT_IMPLEMENTED"},
    {reply_code::internal_error, "INTERNAL_ERROR"},
};

}  // namespace

const char* reply_code_name(reply_code code) {
  for (const auto& entry : code_names)
    if (entry.code == code) return entry.name;
  return "INTERNAL_ERROR";
}

bool parse_reply_code_name(const std::string& name, reply_code& out) {
  for (const auto& entry : code_names) {
    if (name == entry.name) {
      out = entry.code;
      return true;
    }
  }
  return false;
}

}  // namespace warren
