// Persistence actor: the only writer of the metadata store (LMDB).
//
//   (persist_atom, std::vector<meta_mutation>)  -> void, once the batch is committed (or an
//                                                  INTERNAL_ERROR naming what failed)
//
// Group commit: requests are collected and the actor sends itself a flush message; everything
// that arrived before the flush is processed goes into one write transaction (one fsync).
//
// A failed commit (an I/O error, a full disk) is answered with the error, so nothing is
// acknowledged that is not stored. LMDB syncs the data before it writes the meta page that makes
// a transaction count, so a failed sync leaves the last committed state whole, and writing
// later is safe. The failed changes are kept and written first with the next commit, or by a
// retry a second later: deletes have already happened in memory, and the disk must follow.
#pragma once

#include "actors/common/protocol.hpp"
#include "persistence/lmdb_store.hpp"

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <memory>

namespace warren {

using persist_atom = caf::atom_constant<caf::atom("persist")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;

/// Its interface: batches of metadata changes, answered once committed; flush is its own.
using persistence_actor_type =
    caf::typed_actor<caf::reacts_to<persist_atom, std::vector<persistence::meta_mutation>>,
                     caf::reacts_to<flush_atom>>;

struct persistence_state {
  std::shared_ptr<persistence::lmdb_store> store;
  std::vector<persistence::meta_mutation> batch;
  std::vector<caf::response_promise> waiting;
  bool flush_scheduled = false;
  // Changes of failed commits, in order: memory already holds them (or has taken them back
  // with a later change), so they go first into every later commit until one succeeds.
  std::vector<persistence::meta_mutation> unwritten;
  bool retry_scheduled = false;

  static inline const char* name = "persistence";
};

/// Commits `batch` through `store` (the persistence actor), then calls done(error-or-none) in
/// `self`'s context. Without a store (actors tested alone) or with nothing to store, done runs
/// at once.
template <class Self, class Done>
void persist(Self* self, const caf::actor& store, std::vector<persistence::meta_mutation> batch,
             Done done) {
  if (batch.empty() || !store) {
    done(caf::error{});
    return;
  }
  self->request(caf::actor_cast<persistence_actor_type>(store), caf::infinite, persist_atom::value,
                std::move(batch))
      .then([=]() mutable { done(caf::error{}); }, [=](caf::error& err) mutable { done(err); });
}

/// Answers a request promised as `void` (CAF 0.17 needs the untyped promise for that).
inline void deliver_unit(caf::typed_response_promise<void>& rp) {
  static_cast<caf::response_promise&>(rp).deliver(caf::unit);
}

persistence_actor_type::behavior_type persistence_actor(
    persistence_actor_type::stateful_pointer<persistence_state> self,
    std::shared_ptr<persistence::lmdb_store> store);

}  // namespace warren
