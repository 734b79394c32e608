// The vhost actor's parts (vhost_actor.hpp), shared by its files and by nothing else: exchanges
// and bindings (vhost_bindings.cpp), queues (vhost_queues.cpp), the cluster (vhost_cluster.cpp:
// our queues announced, other nodes' queues reached, queue name claims, replicated changes), and
// the actor with its start-up and shutdown (vhost_actor.cpp).
#pragma once

#include "actors/queue/queue_arguments.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "actors/vhost/vhost_actor.hpp"
#include "actors/vhost/vhost_records.hpp"

#include <caf/typed_response_promise.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace warren::persistence {
struct meta_condition;
struct metadata_entry;
}  // namespace warren::persistence

namespace warren::vhost_parts {

using self_ptr = vhost_actor_type::stateful_pointer<vhost_state>;
using vhost_records::changes;

// --- errors and metadata commits (vhost_actor.cpp) ---------------------------------------------

std::string in_vhost(const vhost_state& st);
caf::error no_exchange(const vhost_state& st, const std::string& name);
caf::error no_queue(const vhost_state& st, const std::string& name);
caf::error invalid(const std::string& problem);
/// A create refused because the vhost is being deleted (vhost_state::deleting).
caf::error being_deleted(const vhost_state& st, const std::string& what);

template <class Done>
void persist(self_ptr self, changes batch, Done done) {
  warren::persist(self, self->state.storage.persistence, std::move(batch), std::move(done));
}

/// For changes nobody waits for (auto-delete, expiry): a failure is logged.
void persist_quietly(self_ptr self, changes batch);

/// Answers a declare-like request once its metadata is committed.
template <class Promise, class Value>
void reply_after(self_ptr self, changes batch, Promise rp, Value value) {
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      rp.deliver(value);
  });
}

inline void reply_after(self_ptr self, changes batch, caf::typed_response_promise<void> rp) {
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
  });
}

// --- records being committed ------------------------------------------------------------------

// A new durable exchange or binding takes effect once its record is committed. Until then its
// name is held (vhost_state::committing): requests naming it wait for the commit, then go again.
// Taking effect at once and taking it back after a failed commit would have answered others
// (a second declare, a publish) on the strength of something that then vanished.
std::string exchange_hold(const std::string& name);
std::string binding_hold(const binding_spec& b);
bool held(const vhost_state& st, const std::string& hold);
/// The first of an exchange's or binding's holds that is held, or "".
std::string binding_hold_in_force(const vhost_state& st, const binding_spec& b);
/// Ends a hold; the requests that waited on it go again.
void release(self_ptr self, const std::string& hold);

// --- exchanges and bindings (vhost_bindings.cpp) -----------------------------------------------

/// Bindings survive a restart between a durable exchange and a durable exchange or a stored
/// queue.
bool binding_stored(const vhost_state& st, const binding_spec& b);
/// The exchange `b` names that is not here (its source, or its destination exchange), or "".
std::string missing_exchange(const vhost_state& st, const binding_spec& b);
std::string binding_key(const binding_spec& b);
/// Whether `b` leads to the queue (or, with to_exchange, the exchange) named `name`.
bool leads_to(const binding_spec& b, const std::string& name, bool exchange);

/// The destination of a binding: its target id and actor in the source exchange's table.
struct binding_target {
  uint64_t id = 0;
  caf::actor actor;
};

void add_exchange(self_ptr self, exchange_spec spec, bool builtin);
void add_builtin_exchanges(self_ptr self);
/// Removes an exchange with every binding from or to it.
void remove_exchange(self_ptr self, const std::string& name, changes& out);
/// Forgets the binding and, for an auto-delete exchange left without bindings, the exchange
/// (one the log holds is deleted through it, by the member the unbind was made on: not
/// `from_peer`).
void drop_binding(self_ptr self, const binding_spec& b, changes& out, bool from_peer = false);

// `from_peer`: a change made on another member, applied here without being sent on.
caf::result<void> declare_exchange(self_ptr self, exchange_spec& spec, bool passive,
                                   bool from_peer = false);
caf::result<void> delete_exchange(self_ptr self, const std::string& name, bool if_unused,
                                  bool from_peer = false);
caf::result<void> bind(self_ptr self, binding_spec& b, const caf::actor& requester,
                       bool from_peer = false);
caf::result<void> unbind(self_ptr self, binding_spec& b, const caf::actor& requester,
                         bool from_peer = false);

caf::result<caf::actor, bool> find_exchange(self_ptr self, const std::string& name);
/// Dead letters from a queue go through their exchange; a missing one drops them, as RabbitMQ.
void dead_letter(self_ptr self, const std::string& exchange, std::vector<message_ptr>& msgs);
std::vector<exchange_info> list_exchanges(const vhost_state& st);
std::vector<binding_info> list_bindings(const vhost_state& st);

// --- durable exchanges in the metadata log (vhost_log_exchanges.cpp) --------------------------

/// Whether durable exchanges are the log's (the node said so).
bool exchanges_in_log(const vhost_state& st);
/// Whether the message being handled comes from this process (the node), not a member.
bool from_this_node(self_ptr self);
/// Runs `then` once this node applied every entry the log committed before the call (or the
/// sync failed: then it reads what is here).
void after_log_sync(self_ptr self, std::function<void()> then);
void follow_log(self_ptr self, const caf::actor& node);
/// Takes out of `batch` what the log owns (an exchange's record, which its entry wrote or
/// erased): stored by this vhost as well, a late write could undo a later entry.
void drop_log_owned(const vhost_state& st, changes& batch);
/// The node proposes `entry`; `done` hears "" once this vhost has been given the entry, or why
/// not.
void propose_to_log(self_ptr self, const persistence::metadata_entry& entry,
                    std::function<void(const std::string& error)> done);
/// Conditions of an entry: the vhost there; exchange `name` there (or not).
persistence::meta_condition vhost_there(const vhost_state& st);
persistence::meta_condition exchange_there(const vhost_state& st, const std::string& name,
                                           bool present);
/// A proposal's failure as a client's error: "`what`: `error`".
caf::error not_done(const std::string& what, const std::string& error);
/// Checked requests, made as one log entry each; answered once this vhost applied it.
caf::result<void> declare_exchange_through_log(self_ptr self, const exchange_spec& spec);
/// `if_unused`: refused when a binding of the log's from it was made meanwhile on any member.
caf::result<void> delete_exchange_through_log(self_ptr self, const std::string& name,
                                              bool if_unused = false);
/// An auto-delete exchange left without bindings: its delete proposed, nobody waiting.
void auto_delete_through_log(self_ptr self, const std::string& name);
/// What the log applied, in log order.
void exchange_put_by_log(self_ptr self, const exchange_spec& spec);
void exchange_erased_by_log(self_ptr self, const std::string& name);
void exchanges_replaced_by_log(self_ptr self, const std::vector<exchange_spec>& wanted);

// --- bindings between durable exchanges in the metadata log (vhost_log_bindings.cpp) ----------

/// Whether `b` is the log's: it binds two durable exchanges here, and exchanges are the log's.
bool binding_in_log(const vhost_state& st, const binding_spec& b);
/// Checked requests (both ends here), made as one log entry each; answered once applied here.
caf::result<void> bind_through_log(self_ptr self, const binding_spec& b);
caf::result<void> unbind_through_log(self_ptr self, const binding_spec& b);
/// What the log applied, in log order; an erasure names the binding by its LMDB key.
void binding_put_by_log(self_ptr self, const binding_spec& b);
void binding_erased_by_log(self_ptr self, const std::string& key);
void bindings_replaced_by_log(self_ptr self, const std::vector<binding_spec>& wanted);

// --- durable queues in the metadata log (vhost_log_queues.cpp) --------------------------------

/// Whether a new queue `spec` is the log's: durable, not exclusive, and the log is followed.
bool queue_in_log(const vhost_state& st, const queue_spec& spec);
/// Whether the log names this node the home of queue `name`.
bool home_of_log_queue(const vhost_state& st, const std::string& name);
/// The log's record of queue `name` when another node is its home, or nullptr.
const queue_spec* log_queue_elsewhere(const vhost_state& st, const std::string& name);
/// NOT_FOUND: the log's queue `theirs` lives on a node this one does not reach.
caf::error log_queue_not_reached(const vhost_state& st, const queue_spec& theirs);
/// A new durable queue: its name taken by one log entry, then started here (or, when a member
/// took the name first, declared where that queue lives); `rp` answered after.
void declare_queue_through_log(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                               const caf::actor& requester,
                               caf::typed_response_promise<queue_info> rp);
/// A delete at the queue's home: checked here, then one log entry; the queue goes as it applies.
caf::result<uint32_t> delete_queue_through_log(self_ptr self, const std::string& name,
                                               bool if_unused, bool if_empty);
/// An auto-delete or expired queue of the log's: its delete proposed, nobody waiting.
void queue_unused_through_log(self_ptr self, const std::string& name);
/// What the log applied, in log order.
void queue_put_by_log(self_ptr self, const queue_spec& spec);
void queue_erased_by_log(self_ptr self, const std::string& name);
void queues_replaced_by_log(self_ptr self, const std::vector<queue_spec>& wanted);
/// The node's name is known (set_cluster): what the log applied before that is taken now.
void log_queues_named(self_ptr self);
/// This node's durable queues the log lacks (made before it held queues) are proposed, homed
/// here: once the log is followed and the node's name known, and after each seed or snapshot.
void propose_missing_own_queues(self_ptr self);
/// Node `node` was forgotten: the names of its queues are released through the log.
void forget_log_queues_of(self_ptr self, const std::string& node);
/// A declare of the log's queue `theirs`, which lives on another node: sent on to it there.
caf::result<queue_info> declare_log_queue_at_home(self_ptr self, const queue_spec& theirs,
                                                  const queue_spec& spec, bool passive);

// --- queues (vhost_queues.cpp) -----------------------------------------------------------------

/// Fails with RESOURCE_LOCKED when `q` is exclusive to another connection.
caf::error check_owner(const vhost_state& st, const vhost_state::queue_entry& q,
                       const caf::actor& requester);

/// Starts a queue's actor (recovering its messages, when durable) and binds it to the default
/// exchange by its own name, as every queue is.
void start_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits, uint64_t id,
                 std::map<std::string, int64_t> committed = {});
/// Starts a new queue of this node and answers `rp` once its record is stored.
void create_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                  const caf::actor& requester, caf::typed_response_promise<queue_info> rp);
/// Removes a queue that has already stopped (or is stopping) from the registry.
void forget_queue(self_ptr self, const std::string& name, changes& out);
/// Deletes a queue unconditionally (exclusive owner gone, auto-delete, x-expires).
void delete_queue_now(self_ptr self, const std::string& name);

caf::result<queue_info> declare_queue(self_ptr self, queue_spec& spec, bool passive,
                                      const caf::actor& requester);
caf::result<uint32_t> delete_queue(self_ptr self, const std::string& name, bool if_unused,
                                   bool if_empty, bool force, const caf::actor& requester);
caf::result<uint32_t> purge(self_ptr self, const std::string& name, const caf::actor& requester);
caf::result<stream_reply> stream_request(self_ptr self, const stream_command& cmd,
                                         const caf::actor& requester);
caf::result<caf::actor> find_queue(self_ptr self, const std::string& name,
                                   const caf::actor& requester);
/// A queue that should go (auto-delete, x-expires), unless it was replaced meanwhile.
void queue_unused(self_ptr self, const std::string& name, const caf::actor& queue);

caf::typed_response_promise<std::vector<queue_info>> list_queues(self_ptr self);
caf::typed_response_promise<std::vector<consumer_info>> list_consumers(self_ptr self);
caf::typed_response_promise<lookup_reply> lookup(self_ptr self, const message_id& id);
/// Answered once every queue has recovered (queues recover before their first message).
caf::typed_response_promise<void> when_ready(self_ptr self);

// --- the cluster (vhost_cluster.cpp) -----------------------------------------------------------

/// How long a member's queue may take to answer a listing.
constexpr auto remote_timeout = std::chrono::seconds(10);
/// How long a member may take to carry out a declare, delete, purge or stream command for one
/// of its queues (a record committed there). A member whose link dies never answers, and CAF
/// 0.17 gives requests already sent no error: the asker (a channel, whose publishes wait behind
/// its declares) must not wait for ever.
constexpr auto member_timeout = std::chrono::seconds(30);

/// Sends a request for one of its queues to a member's vhost and relays the answer, or a
/// timeout after member_timeout.
template <class T, class... Ts>
caf::result<T> ask_member(self_ptr self, const caf::actor& home, Ts... xs) {
  auto rp = self->make_response_promise<T>();
  self->request(vhost_handle(home), member_timeout, xs...)
      .then([=](T& answer) mutable { rp.deliver(std::move(answer)); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::error node_down(const vhost_state& st, const remote_queues::entry& e);

/// Sends a change made here to the other members (not one applied from them).
void replicate(self_ptr self, topology_change change);
/// Bindings to exclusive queues stay with them; the default exchange's are implicit.
bool replicated(const vhost_state& st, const binding_spec& b);
/// Tells the cluster where a queue of ours lives (exclusive queues stay with their connection).
void announce(self_ptr self, const vhost_state::queue_entry& q);
void unannounce(self_ptr self, const vhost_state::queue_entry& q);

void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& node_name);
void remote_placed(self_ptr self, const queue_placement& p);
/// Everything `node` has in this vhost, sent as it (re)joins.
void remote_placed_all(self_ptr self, const std::string& node,
                       const std::vector<queue_placement>& placements);
void remote_removed(self_ptr self, const std::string& name, const std::string& node);
void remote_node_gone(self_ptr self, const std::string& node, bool down);

/// Our exchanges and bindings as the members share them (a member's metadata_view carries them).
vhost_topology topology(const vhost_state& st);
/// Takes a member's exchanges and bindings in place of ours.
void adopt_topology(self_ptr self, const vhost_topology& theirs);
/// A binding made on a member; one to a queue not placed here yet waits for its placement.
caf::result<void> bind_from_peer(self_ptr self, binding_spec& b);
caf::result<void> unbind_from_peer(self_ptr self, binding_spec& b);

bool claim_pending(const vhost_state& st, const std::string& queue);
/// Requests that waited for a claim on their name go again, now that it is settled.
void unpark(std::vector<std::function<void()>> parked);

// A request naming a queue whose claim is pending waits for it: it goes to this vhost again once
// the claim is settled (the queue created here, or found elsewhere), and its answer to the asker.
// So a client (or a definitions import) that binds or consumes right after declaring finds the
// queue, as on a single node.
template <class T, class... Ts>
caf::result<T> park_on(self_ptr self, std::vector<std::function<void()>>& waiting, Ts... xs) {
  auto rp = self->make_response_promise<T>();
  waiting.push_back([=]() mutable {
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite, xs...)
        .then([=](T& answer) mutable { rp.deliver(std::move(answer)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  });
  return rp;
}

template <class... Ts>
caf::result<void> park_void_on(self_ptr self, std::vector<std::function<void()>>& waiting,
                               Ts... xs) {
  auto rp = self->make_response_promise<void>();
  waiting.push_back([=]() mutable {
    self->request(vhost_handle(caf::actor_cast<caf::actor>(self)), caf::infinite, xs...)
        .then([=]() mutable { deliver_unit(rp); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  });
  return rp;
}

template <class T, class... Ts>
caf::result<T> park(self_ptr self, const std::string& name, Ts... xs) {
  return park_on<T>(self, self->state.claims[name].parked, xs...);
}

template <class... Ts>
caf::result<void> park_void(self_ptr self, const std::string& name, Ts... xs) {
  return park_void_on(self, self->state.claims[name].parked, xs...);
}

/// A queue name is ordered across the cluster before a queue of that name is created.
void claim_then_create(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                       const caf::actor& requester, caf::typed_response_promise<queue_info> rp);
/// Another member is about to create queue `spec.name`: what we know of that name.
claim_reply answer_claim(self_ptr self, const std::string& from, const queue_spec& spec);
/// A new queue asked for on another node (--node): that node's vhost of this name declares it.
caf::result<queue_info> declare_elsewhere(self_ptr self, queue_spec spec);

}  // namespace warren::vhost_parts
