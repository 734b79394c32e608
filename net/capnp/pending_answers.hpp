// pending_answers: the answers a kj thread awaits from an actor, by request id. The kj thread
// cannot wait on CAF, so each request gets an id and a promise; the answer, posted back onto
// the loop with that id, fulfils the promise with the actor's answer or rejects it with the
// broker's error ("NOT_FOUND: ..."). Its own file because it is not rpc_session's alone:
// whatever asks an actor from a kj loop settles its promises this way (net/http may include
// net/capnp, so the management door's node_query can too).
//
// `Answer` is what the actor answers with: a request_answer from a connection actor
// (rpc_session), a caf::message from the node (node_query, whose answers are not client_link's:
// logging in answers two values). pending_answers.cpp instantiates both.
//
// kj thread only. An answer for an id no longer pending (settled, or rejected by reject_all)
// is dropped.
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/request_answer.hpp"

#include <kj/async.h>
#include <caf/error.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <unordered_map>

namespace warren::net {

template <class Answer>
class pending_answers {
 public:
  /// A request about to be sent: its id, and the promise its answer settles.
  struct awaited {
    uint64_t id;
    kj::Promise<Answer> answer;
  };

  /// Opens a request; send it with `id` once this returns.
  awaited open();

  /// Settles request `id`: rejected with the broker's error when `error` is set, else fulfilled
  /// with `answer`.
  void complete(uint64_t id, caf::error error, Answer answer);

  /// Rejects every pending request with `reason`: whoever was to answer them is gone.
  void reject_all(const broker_failure& reason);

 private:
  uint64_t next_ = 0;
  std::unordered_map<uint64_t, kj::Own<kj::PromiseFulfiller<Answer>>> pending_;
};

extern template class pending_answers<request_answer>;
extern template class pending_answers<caf::message>;

}  // namespace warren::net
