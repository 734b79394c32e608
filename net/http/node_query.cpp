#include "net/http/node_query.hpp"

#include "net/capnp/wire_convert.hpp"

namespace warren::net::http {

void node_query::complete(uint64_t id, caf::error err, caf::message result) {
  auto i = pending_.find(id);
  if (i == pending_.end()) return;
  auto fulfiller = kj::mv(i->second);
  pending_.erase(i);
  if (err)
    fulfiller->reject(to_exception(describe(err)));
  else
    fulfiller->fulfill(kj::mv(result));
}

}  // namespace warren::net::http
