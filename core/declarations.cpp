#include "core/declarations.hpp"

namespace warren {

const char* to_string(exchange_type t) {
  switch (t) {
    case exchange_type::direct:
      return "direct";
    case exchange_type::fanout:
      return "fanout";
    case exchange_type::topic:
      return "topic";
    case exchange_type::headers:
      return "headers";
  }
  return "direct";
}

bool parse_exchange_type(const std::string& text, exchange_type& out) {
  for (auto t : {exchange_type::direct, exchange_type::fanout, exchange_type::topic,
                 exchange_type::headers}) {
    if (text == to_string(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

}  // namespace warren
