#include "core/outcomes.hpp"

namespace warren {

std::string to_string(publish_outcome o) {
  switch (o) {
    case publish_outcome::routed:
      return "routed";
    case publish_outcome::returned:
      return "returned";
    case publish_outcome::dropped:
      return "dropped";
    case publish_outcome::rejected:
      return "rejected";
  }
  return "routed";
}

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
