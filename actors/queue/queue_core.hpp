// queue_core: what every queue type holds and does the same way, the classic queue
// (queue_actor) and the stream (stream_actor) alike, so that each mechanism has one copy:
//   - its identity (vhost, spec, limits) and how errors and log lines name it;
//   - its segment store, opened and recovered, or "unavailable" with the reason when its files
//     could not be read (then the folder is never touched, so nothing there is overwritten);
//   - group commit: the first store write of a mailbox run asks for one sync, and every publish
//     stored before it is confirmed (or nacked, if its record failed) when that sync ran;
//   - refusing publishes, the delete checks and the delete sequence (consumers told, files
//     destroyed, waiting publishes nacked, the actor quits);
//   - the fields of queue_info every type fills the same way;
//   - watching consumers' connections, and the exit and down handlers.
// Each type derives its state from queue_core and keeps what differs: a ready list and acks for
// the classic queue, offsets and groups for the stream.
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/common/queue_protocol.hpp"
#include "actors/queue/queue_arguments.hpp"
#include "actors/storage/memory_ledger.hpp"
#include "actors/storage/storage_context.hpp"
#include "persistence/segment_store.hpp"

#include <caf/actor_addr.hpp>
#include <caf/system_messages.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace warren {

/// Confirms for publishes whose messages wait for the next sync of the store.
class group_commit {
 public:
  /// Acks and nacks for one channel of one connection: one confirm message.
  struct confirms {
    caf::actor origin;
    uint16_t channel = 0;
    std::vector<uint64_t> acked;
    std::vector<uint64_t> nacked;
  };

  /// Publish `publish_seq` of `batch`'s channel, stored as record `store_seq`, is confirmed at
  /// the next sync (publishes without a confirm sequence, or without an origin, are not held).
  void await(const publish_batch& batch, uint64_t publish_seq, uint64_t store_seq);
  /// True for the first request since the last sync: the caller sends itself one sync message,
  /// which every write before it shares.
  bool request_sync();
  /// The sync ran: everything held is answered, acked unless its record is in `failed`.
  std::vector<confirms> synced(const std::vector<uint64_t>& failed);
  /// The store went (delete), or a sync found none: nothing held was stored, so all of it is
  /// nacked, and the next write asks for a sync again.
  std::vector<confirms> refuse_all();
  bool empty() const { return waiting_.empty(); }

 private:
  struct waiter {
    caf::actor origin;
    uint16_t channel;
    uint64_t publish_seq;
    uint64_t store_seq;
  };
  std::vector<waiter> waiting_;
  bool sync_requested_ = false;
};

/// Every publish of `batch` that asked for a confirm, nacked: what a queue that cannot take
/// them answers.
std::vector<group_commit::confirms> refusal_of(const publish_batch& batch);

struct queue_core {
  std::string vhost;
  queue_spec spec;
  queue_limits limits;
  caf::actor vhost_actor;
  storage_context storage;
  std::unique_ptr<persistence::segment_store> store;
  // Why the files could not be loaded; while set, the queue refuses all work and never touches
  // its folder, so nothing there is lost or overwritten.
  std::string unavailable;
  group_commit commits;
  traffic_counters traffic;
  memory_share memory;
  std::unordered_set<caf::actor_addr> monitored;  // connections of consumers and holders
  bool stream = false;

  /// "queue 'q' in vhost '/'" (or "stream ..."): how errors and log lines name it.
  std::string describe() const;
  /// The log component: "queue" or "stream".
  const char* kind() const { return stream ? "stream" : "queue"; }
};

/// RESOURCE_ERROR naming the queue and why it is unavailable.
caf::error unavailable_error(const queue_core& q);

/// Marks the queue unavailable because its files could not be loaded (`why`), drops its store
/// and logs it once.
void mark_unavailable(queue_core& q, const std::string& why);

/// Marks the queue unavailable because a sync of its files failed (`why`; see
/// segment_store::sync_failure), drops its store and logs it once.
void mark_sync_failed(queue_core& q, const std::string& why);

/// Opens q.store's files by calling `recover` (which reads them); if that throws, the store is
/// dropped, q.unavailable says why and the failure is logged. False when unavailable.
template <class Recover>
bool recover_or_unavailable(queue_core& q, Recover&& recover) {
  try {
    recover();
    return true;
  } catch (const std::exception& e) {
    mark_unavailable(q, e.what());
    return false;
  }
}

/// Recovery's findings for a log line: ", 3 undecodable record(s) skipped, ..." (empty when the
/// files were whole).
std::string recovery_findings(const persistence::recovery_report& report);

/// PRECONDITION_FAILED when delete's if-unused or if-empty forbids it; `what` names the messages
/// counted ("message(s) ready").
caf::error delete_precondition(const queue_core& q, size_t consumers, uint64_t messages,
                               bool if_unused, bool if_empty, const char* what);

/// The fields every queue type reports alike; the caller adds ready, unacked and its own.
queue_info core_info(const queue_core& q, size_t consumers);

/// Removes the queue's folder; a failure is logged (the queue goes anyway).
void destroy_store(queue_core& q);

// --- sending, for either actor type ------------------------------------------------------------

template <class Self>
void send_confirms(Self* self, std::vector<group_commit::confirms> all) {
  for (auto& c : all)
    self->send(caf::actor_cast<connection_broker_api>(c.origin), confirm_atom::value, c.channel,
               std::move(c.acked), std::move(c.nacked));
}

/// Sends the store's sync to itself unless one is on its way.
template <class Self>
void schedule_sync(Self* self) {
  auto& q = self->state;
  if (q.store && q.commits.request_sync()) self->send(self, sync_atom::value);
}

/// Monitors `connection` once, so that what it holds comes back when it goes.
template <class Self>
void watch(Self* self, const caf::actor& connection) {
  if (connection && self->state.monitored.insert(connection.address()).second)
    self->monitor(connection);
}

/// Tells each consumer's connection that the queue cancelled it, and why.
template <class Self, class Consumers>
void tell_cancelled(Self* self, const Consumers& consumers, const std::string& why) {
  for (const auto& c : consumers)
    self->send(caf::actor_cast<connection_broker_api>(c.spec.connection), cancelled_atom::value,
               c.spec.channel, c.spec.tag, why);
}

/// The delete sequence: each consumer is told, the files go, publishes still waiting for a sync
/// are nacked (they are not stored now), and the actor quits.
template <class Self, class Consumers>
void finish_delete(Self* self, const Consumers& consumers) {
  auto& q = self->state;
  tell_cancelled(self, consumers, q.describe() + " was deleted");
  destroy_store(q);
  send_confirms(self, q.commits.refuse_all());
  self->quit();
}

/// At node shutdown `flush` writes what is pending before the actor goes; when a watched
/// connection goes, `release(self, address)` takes back what it held.
template <class Self, class Flush, class Release>
void install_queue_handlers(Self* self, Flush flush, Release release) {
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (self->state.store) flush(self);
    self->quit(msg.reason);
  });
  self->set_down_handler([=](caf::down_msg& dm) {
    self->state.monitored.erase(dm.source);
    release(self, dm.source);
  });
}

/// A queue kind's answers to what connections send (queue_consumer_api): the classic queue and
/// the stream each fill one in with their own functions, and consumer_behavior turns it into
/// the one table of these messages that both actors use.
template <class Self>
struct consumer_operations {
  caf::result<void> (*consume)(Self, consumer_spec& spec);
  void (*cancel)(Self, const caf::actor& conn, uint16_t channel, const std::string& tag,
                 bool requeue_unacked);
  void (*credit)(Self, const caf::actor& conn, uint16_t channel, const std::string& tag,
                 uint32_t n);
  void (*settle)(Self, const caf::actor& conn, const std::vector<uint64_t>& ids, settle_kind kind);
  /// A connection (no channel) or one of its channels went: what it held comes back.
  void (*release)(Self, const caf::actor_addr& conn, std::optional<uint16_t> channel);
  caf::result<get_reply> (*get)(Self, const caf::actor& conn, uint16_t channel, bool no_ack);
};

template <class Self>
queue_consumer_api::behavior_type consumer_behavior(Self self, consumer_operations<Self> ops) {
  return {
      [=](consume_atom, consumer_spec& spec) { return ops.consume(self, spec); },
      [=](cancel_atom, const caf::actor& conn, uint16_t channel, const std::string& tag,
          bool requeue_unacked) { ops.cancel(self, conn, channel, tag, requeue_unacked); },
      [=](credit_atom, const caf::actor& conn, uint16_t channel, const std::string& tag,
          uint32_t n) { ops.credit(self, conn, channel, tag, n); },
      [=](settle_atom, const caf::actor& conn, const std::vector<uint64_t>& ids, settle_kind kind) {
        ops.settle(self, conn, ids, kind);
      },
      [=](close_atom, const caf::actor& conn, uint16_t channel) {
        ops.release(self, conn.address(), channel);
      },
      [=](get_atom, const caf::actor& conn, uint16_t channel, bool no_ack) {
        return ops.get(self, conn, channel, no_ack);
      },
  };
}

}  // namespace warren
