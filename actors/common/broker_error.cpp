#include "actors/common/broker_error.hpp"

#include <caf/atom.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>

namespace warren {

namespace {

constexpr caf::atom_value warren_category = caf::atom("warren");

}  // namespace

bool is_channel_error(reply_code code) {
  switch (code) {
    case reply_code::access_refused:
    case reply_code::not_found:
    case reply_code::resource_locked:
    case reply_code::precondition_failed:
    case reply_code::no_route:
      return true;
    default:
      return false;
  }
}

std::string to_string(const broker_failure& f) {
  return std::string(reply_code_name(f.code)) + ": " + f.text;
}

caf::error make_broker_error(reply_code code, std::string text) {
  return caf::error(1, warren_category,
                    caf::make_message(static_cast<uint16_t>(code), std::move(text)));
}

broker_failure describe(const caf::error& err) {
  if (err.category() == warren_category) {
    const auto& ctx = err.context();
    if (ctx.match_elements<uint16_t, std::string>())
      return {static_cast<reply_code>(ctx.get_as<uint16_t>(0)), ctx.get_as<std::string>(1)};
  }
  if (err.category() == caf::atom("system")) {
    auto code = static_cast<caf::sec>(err.code());
    if (code == caf::sec::request_receiver_down)
      return {reply_code::not_found, "the object was deleted while the request was in flight"};
    return {reply_code::internal_error, caf::to_string(code)};
  }
  return {reply_code::internal_error, "unexpected error"};
}

}  // namespace warren
