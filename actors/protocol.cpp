#include "actors/protocol.hpp"

namespace warren {

std::string to_string(settle_kind k) {
  switch (k) {
    case settle_kind::ack:
      return "ack";
    case settle_kind::requeue:
      return "requeue";
    case settle_kind::reject:
      return "reject";
  }
  return "ack";
}

}  // namespace warren
