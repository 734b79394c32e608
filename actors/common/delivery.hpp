// delivery: one message as one client receives it, whether pushed to a consumer
// (client_link::deliver) or answering a get or peek (request_answer). Its own header because
// request_answer.hpp needs it and client_link.hpp includes request_answer.hpp.
#pragma once

#include "core/message.hpp"

#include <cstdint>

namespace warren {

/// A message as one client receives it: channel-scoped tag, redelivered flag, shared message.
struct delivery {
  uint64_t tag = 0;  // 0 for a no-ack get
  bool redelivered = false;
  message_ptr msg;
  uint32_t message_count = 0;  // get only: ready messages left
  int64_t stream_offset = -1;  // its offset, for a message of a stream
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delivery& x) {
  return f(x.tag, x.redelivered, x.msg, x.message_count, x.stream_offset);
}

}  // namespace warren
