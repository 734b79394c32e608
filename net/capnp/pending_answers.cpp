// How pending_answers settles a request's promise; its contract is in pending_answers.hpp.
#include "net/capnp/pending_answers.hpp"

#include "net/capnp/wire_convert.hpp"

namespace warren::net {

template <class Answer>
typename pending_answers<Answer>::awaited pending_answers<Answer>::open() {
  auto id = ++next_;
  auto pair = kj::newPromiseAndFulfiller<Answer>();
  pending_.emplace(id, kj::mv(pair.fulfiller));
  return {id, kj::mv(pair.promise)};
}

template <class Answer>
void pending_answers<Answer>::complete(uint64_t id, caf::error error, Answer answer) {
  auto i = pending_.find(id);
  if (i == pending_.end()) return;
  auto fulfiller = kj::mv(i->second);
  pending_.erase(i);
  if (error)
    fulfiller->reject(to_exception(describe(error)));
  else
    fulfiller->fulfill(kj::mv(answer));
}

template <class Answer>
void pending_answers<Answer>::reject_all(const broker_failure& reason) {
  auto pending = kj::mv(pending_);
  pending_.clear();
  for (auto& [id, fulfiller] : pending) fulfiller->reject(to_exception(reason));
}

template class pending_answers<request_answer>;
template class pending_answers<caf::message>;

}  // namespace warren::net
