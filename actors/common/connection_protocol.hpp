// The connection actor's protocol, declared once: what the front doors ask of it, what the node,
// queues and exchanges tell it, and connection_ref, the one way the front doors send.
//
// Every request from a front door carries a request id (and most a channel number); the actor
// answers it exactly once through client_link::reply(request, error, answer). The answers are
// named on each connection_ref method: "-> T" means `answer` (a request_answer) holds a T, "-> ()"
// std::monostate. A channel error (AMQP's rules) also closes that channel, reported through
// client_link::channel_closed.
//
// The interfaces are CAF typed_actor signatures, so a front door that sends a message the actor
// does not handle, or the actor's behaviour missing or mistyping one, fails to compile.
#pragma once

#include "actors/common/cluster_protocol.hpp"
#include "actors/common/protocol.hpp"

#include <caf/send.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warren {

/// Opening and closing the connection and its channels, declarations, publishing, consuming.
using connection_session_api = caf::typed_actor<
    caf::reacts_to<open_atom, uint64_t>,                           // log in
    caf::reacts_to<auth_atom, uint64_t, std::string>,              // a new password (secret)
    caf::reacts_to<close_atom, uint64_t>,                          // connection close
    caf::reacts_to<open_atom, uint64_t, uint16_t>,                 // channel open
    caf::reacts_to<close_atom, uint64_t, uint16_t>,                // channel close
    caf::reacts_to<qos_atom, uint64_t, uint16_t, uint32_t>,        // prefetch
    caf::reacts_to<qos_atom, uint64_t, uint16_t, uint32_t, bool>,  // prefetch, global
    caf::reacts_to<confirm_atom, uint64_t, uint16_t>,              // confirm.select
    caf::reacts_to<declare_atom, uint64_t, uint16_t, exchange_spec, bool>,
    caf::reacts_to<delete_atom, exchanges_atom, uint64_t, uint16_t, std::string, bool>,
    caf::reacts_to<declare_atom, uint64_t, uint16_t, queue_spec, bool>,
    caf::reacts_to<delete_atom, queues_atom, uint64_t, uint16_t, std::string, bool, bool, bool>,
    caf::reacts_to<stream_atom, uint64_t, uint16_t, stream_command>,
    caf::reacts_to<purge_atom, uint64_t, uint16_t, std::string>,
    caf::reacts_to<bind_atom, uint64_t, uint16_t, binding_spec>,
    caf::reacts_to<unbind_atom, uint64_t, uint16_t, binding_spec>,
    caf::reacts_to<publish_atom, uint64_t, uint16_t, std::vector<message_ptr>>,
    caf::reacts_to<consume_atom, uint64_t, uint16_t, consume_request>,
    caf::reacts_to<cancel_atom, uint64_t, uint16_t, std::string, bool>,
    caf::reacts_to<flushed_atom, uint16_t, std::string, uint32_t>,
    caf::reacts_to<get_atom, uint64_t, uint16_t, std::string, bool>,
    caf::reacts_to<peek_atom, uint64_t, uint16_t, std::string, uint64_t, uint32_t>,
    caf::reacts_to<settle_atom, uint64_t, uint16_t, uint64_t, bool, settle_kind>,
    caf::reacts_to<settle_atom, uint64_t, uint16_t, std::vector<uint64_t>>,
    caf::reacts_to<recover_atom, uint64_t, uint16_t>,
    caf::reacts_to<lookup_atom, uint64_t, uint16_t, message_id>>;

/// Node administration, relayed to the node: vhosts, users, permissions, definitions, grants
/// and forgetting a cluster member.
using connection_access_api = caf::typed_actor<
    caf::reacts_to<declare_atom, vhost_atom, uint64_t, std::string>,
    caf::reacts_to<delete_atom, vhost_atom, uint64_t, std::string>,
    caf::reacts_to<settings_atom, vhost_atom, uint64_t, std::string, vhost_limits>,
    caf::reacts_to<settings_atom, vhost_atom, uint64_t, std::string>,
    caf::reacts_to<declare_atom, user_atom, uint64_t, std::string, std::string,
                   std::vector<std::string>>,
    caf::reacts_to<settings_atom, user_atom, uint64_t, std::string, std::string>,
    caf::reacts_to<delete_atom, user_atom, uint64_t, std::string>,
    caf::reacts_to<declare_atom, permission_atom, uint64_t, permission_record>,
    caf::reacts_to<delete_atom, permission_atom, uint64_t, std::string, std::string>,
    caf::reacts_to<export_atom, uint64_t>, caf::reacts_to<import_atom, uint64_t, definitions>,
    // capability grants: mint (what, ttl in seconds; 0 = none), revoke (token or prefix)
    caf::reacts_to<grant_atom, uint64_t, grant_record, int64_t>,
    caf::reacts_to<revoke_atom, uint64_t, std::string>,
    caf::reacts_to<forget_atom, uint64_t, std::string>,
    // waits until this node applied what the metadata log committed before (linearizable reads)
    caf::reacts_to<sync_atom, metalog_atom, uint64_t>>;

/// Listings and statistics: node-wide ones from the node, the vhost's own from the vhost.
using connection_listing_api = caf::typed_actor<
    caf::reacts_to<list_atom, permission_atom, uint64_t>,
    caf::reacts_to<list_atom, user_atom, uint64_t>, caf::reacts_to<list_atom, vhost_atom, uint64_t>,
    caf::reacts_to<list_atom, grant_atom, uint64_t>, caf::reacts_to<stats_atom, uint64_t>,
    caf::reacts_to<list_atom, conns_atom, uint64_t>,
    caf::reacts_to<list_atom, nodes_atom, uint64_t>,
    caf::reacts_to<list_atom, exchanges_atom, uint64_t>,
    caf::reacts_to<list_atom, queues_atom, uint64_t>,
    caf::reacts_to<list_atom, bindings_atom, uint64_t>,
    caf::reacts_to<list_atom, consumers_atom, uint64_t>>;

/// Node and vhost administration.
using connection_admin_api = connection_access_api::extend_with<connection_listing_api>;

/// What the node, the queues and the connection's own timer tell it.
using connection_broker_api = caf::typed_actor<
    caf::reacts_to<timeout_atom>,                        // consumer-timeout check
    caf::replies_to<stats_atom>::with<connection_info>,  // the node's statistics
    caf::reacts_to<blocked_atom, bool, std::string>,     // the resource alarm (and why)
    caf::reacts_to<confirm_atom, uint16_t, std::vector<uint64_t>, std::vector<uint64_t>>,
    caf::reacts_to<cancelled_atom, uint16_t, std::string, std::string>,  // queue gone
    caf::reacts_to<down_atom, std::string>,   // a cluster member went down
    caf::reacts_to<close_atom, std::string>,  // the node ends it (its grant revoked or expired)
    caf::reacts_to<deliver_atom, uint16_t, std::string, bool, std::vector<queued_delivery>>>;

/// What the front doors may send.
using connection_requests = connection_session_api::extend_with<connection_admin_api>;

/// The connection actor's whole interface.
using connection_actor_type = connection_requests::extend_with<connection_broker_api>;

/// A front door's handle to its connection actor: one method per request, each a message the
/// actor's interface is checked to handle. Sends never block; answers come through the
/// client_link. A default-constructed ref sends nothing.
class connection_ref {
 public:
  connection_ref() = default;
  explicit connection_ref(connection_requests actor) : actor_(std::move(actor)) {}

  explicit operator bool() const { return static_cast<bool>(actor_); }
  const connection_requests& actor() const { return actor_; }

  // --- connection and channels ---------------------------------------------------------------
  /// Logs in with the hello the actor was spawned with. -> (), or grant_record when logging in
  /// by a grant's token
  void open(uint64_t r) { send(open_atom::value, r); }
  /// AMQP's connection.update-secret: `secret` replaces the password once it passes the same
  /// login rule; one that does not closes the connection. -> ()
  void update_secret(uint64_t r, std::string secret) {
    send(auth_atom::value, r, std::move(secret));
  }
  /// Closes the connection once publishes already accepted are routed; r = 0: no answer. -> ()
  void close(uint64_t r = 0) { send(close_atom::value, r); }
  void open_channel(uint64_t r, uint16_t ch) { send(open_atom::value, r, ch); }  // -> ()
  /// r = 0: no answer (the client is gone or does not wait).
  void close_channel(uint64_t r, uint16_t ch) { send(close_atom::value, r, ch); }  // -> ()
  /// Prefetch for consumers started later on this channel. -> ()
  void qos(uint64_t r, uint16_t ch, uint32_t prefetch) { send(qos_atom::value, r, ch, prefetch); }
  /// AMQP's basic.qos: global = one limit shared by the channel's consumers. -> ()
  void qos(uint64_t r, uint16_t ch, uint32_t prefetch, bool global) {
    send(qos_atom::value, r, ch, prefetch, global);
  }
  void confirm_select(uint64_t r, uint16_t ch) { send(confirm_atom::value, r, ch); }  // -> ()

  // --- declarations ---------------------------------------------------------------------------
  void declare_exchange(uint64_t r, uint16_t ch, exchange_spec spec, bool passive) {  // -> ()
    send(declare_atom::value, r, ch, std::move(spec), passive);
  }
  void delete_exchange(uint64_t r, uint16_t ch, std::string name, bool if_unused) {  // -> ()
    send(delete_atom::value, exchanges_atom::value, r, ch, std::move(name), if_unused);
  }
  /// -> queue_info (the name the broker gave, counts)
  void declare_queue(uint64_t r, uint16_t ch, queue_spec spec, bool passive) {
    send(declare_atom::value, r, ch, std::move(spec), passive);
  }
  /// -> uint32_t (messages deleted). `force` deletes a stream whose consumer groups have not
  /// reached its end.
  void delete_queue(uint64_t r, uint16_t ch, std::string name, bool if_unused, bool if_empty,
                    bool force = false) {
    send(delete_atom::value, queues_atom::value, r, ch, std::move(name), if_unused, if_empty,
         force);
  }
  /// A stream's commit, group listing or read by offset. -> stream_reply
  void stream(uint64_t r, uint16_t ch, stream_command cmd) {
    send(stream_atom::value, r, ch, std::move(cmd));
  }
  /// -> uint32_t (messages purged)
  void purge(uint64_t r, uint16_t ch, std::string queue) {
    send(purge_atom::value, r, ch, std::move(queue));
  }
  void bind(uint64_t r, uint16_t ch, binding_spec b) {  // -> ()
    send(bind_atom::value, r, ch, std::move(b));
  }
  void unbind(uint64_t r, uint16_t ch, binding_spec b) {  // -> ()
    send(unbind_atom::value, r, ch, std::move(b));
  }

  // --- publishing and consuming ---------------------------------------------------------------
  /// Answered once every queue has each message: -> std::vector<publish_outcome>, in order.
  void publish(uint64_t r, uint16_t ch, std::vector<message_ptr> msgs) {
    send(publish_atom::value, r, ch, std::move(msgs));
  }
  /// -> std::string (the consumer tag)
  void consume(uint64_t r, uint16_t ch, consume_request c) {
    send(consume_atom::value, r, ch, std::move(c));
  }
  /// requeue_unacked: the consumer's unacked deliveries go back to the queue (Cap'n Proto);
  /// otherwise they stay on the channel to be settled (AMQP). -> ()
  void cancel(uint64_t r, uint16_t ch, std::string tag, bool requeue_unacked) {
    send(cancel_atom::value, r, ch, std::move(tag), requeue_unacked);
  }
  /// The front door wrote n deliveries of this consumer to the network (credit for consumers
  /// not limited by acks). No answer.
  void flushed(uint16_t ch, std::string tag, uint32_t n) {
    send(flushed_atom::value, ch, std::move(tag), n);
  }
  /// -> delivery, or () when the queue has no message ready
  void get(uint64_t r, uint16_t ch, std::string queue, bool no_ack) {
    send(get_atom::value, r, ch, std::move(queue), no_ack);
  }
  /// Ready messages from position `from` in delivery order, at most `count`, left in the queue
  /// (needs read permission). -> std::vector<delivery>, each tag its position
  void peek(uint64_t r, uint16_t ch, std::string queue, uint64_t from, uint32_t count) {
    send(peek_atom::value, r, ch, std::move(queue), from, count);
  }
  /// Settles `tag` (multiple: every tag up to it; tag 0 with multiple: all). -> ()
  void settle(uint64_t r, uint16_t ch, uint64_t tag, bool multiple, settle_kind kind) {
    send(settle_atom::value, r, ch, tag, multiple, kind);
  }
  /// Acks each tag; fails at the first one not outstanding, having acked those before. -> ()
  void ack_each(uint64_t r, uint16_t ch, std::vector<uint64_t> tags) {
    send(settle_atom::value, r, ch, std::move(tags));
  }
  void recover(uint64_t r, uint16_t ch) { send(recover_atom::value, r, ch); }  // -> ()
  /// -> lookup_reply
  void lookup(uint64_t r, uint16_t ch, const message_id& id) {
    send(lookup_atom::value, r, ch, id);
  }

  // --- administration (node-wide; the front door checks the user's tags) ----------------------
  void add_vhost(uint64_t r, std::string name) {  // -> ()
    send(declare_atom::value, vhost_atom::value, r, std::move(name));
  }
  void delete_vhost(uint64_t r, std::string name) {  // -> ()
    send(delete_atom::value, vhost_atom::value, r, std::move(name));
  }
  void set_vhost_limits(uint64_t r, std::string name, vhost_limits limits) {  // -> ()
    send(settings_atom::value, vhost_atom::value, r, std::move(name), limits);
  }
  void get_vhost_limits(uint64_t r, std::string name) {  // -> vhost_limits
    send(settings_atom::value, vhost_atom::value, r, std::move(name));
  }
  void add_user(uint64_t r, std::string name, std::string password,
                std::vector<std::string> tags) {  // -> ()
    send(declare_atom::value, user_atom::value, r, std::move(name), std::move(password),
         std::move(tags));
  }
  void change_password(uint64_t r, std::string name, std::string password) {  // -> ()
    send(settings_atom::value, user_atom::value, r, std::move(name), std::move(password));
  }
  void delete_user(uint64_t r, std::string name) {  // -> ()
    send(delete_atom::value, user_atom::value, r, std::move(name));
  }
  void set_permissions(uint64_t r, permission_record p) {  // -> ()
    send(declare_atom::value, permission_atom::value, r, std::move(p));
  }
  void clear_permissions(uint64_t r, std::string user, std::string vhost) {  // -> ()
    send(delete_atom::value, permission_atom::value, r, std::move(user), std::move(vhost));
  }
  void list_permissions(uint64_t r) {  // -> std::vector<permission_record>
    send(list_atom::value, permission_atom::value, r);
  }
  void export_definitions(uint64_t r) { send(export_atom::value, r); }  // -> definitions
  void import_definitions(uint64_t r, definitions defs) {               // -> ()
    send(import_atom::value, r, std::move(defs));
  }
  void list_users(uint64_t r) {  // -> std::vector<user_record>
    send(list_atom::value, user_atom::value, r);
  }
  void list_vhosts(uint64_t r) {  // -> std::vector<std::string>
    send(list_atom::value, vhost_atom::value, r);
  }
  void node_stats(uint64_t r) { send(stats_atom::value, r); }  // -> node_stats_info
  /// The cluster's nodes, this one first. -> std::vector<node_info>
  void list_nodes(uint64_t r) { send(list_atom::value, nodes_atom::value, r); }
  /// Removes a member that is down from the cluster (administrators). -> ()
  void forget_node(uint64_t r, std::string name) { send(forget_atom::value, r, std::move(name)); }
  /// Answers once this node applied every metadata change committed before the call. -> ()
  void sync_metadata(uint64_t r) { send(sync_atom::value, metalog_atom::value, r); }
  /// Mints a grant of this connection's vhost as its user; ttl_s 0 = no expiry. -> std::string,
  /// the token's raw bytes (the node keeps only their hash).
  void grant(uint64_t r, grant_record what, int64_t ttl_s) {
    send(grant_atom::value, r, std::move(what), ttl_s);
  }
  void list_grants(uint64_t r) {  // -> std::vector<grant_record>, no hashes
    send(list_atom::value, grant_atom::value, r);
  }
  /// The grant whose token (in hex) starts with `prefix` (8 digits at least). -> ()
  void revoke_grant(uint64_t r, std::string prefix) {
    send(revoke_atom::value, r, std::move(prefix));
  }
  void list_connections(uint64_t r) {  // -> std::vector<connection_info>
    send(list_atom::value, conns_atom::value, r);
  }
  // The connection's vhost: -> std::vector<exchange_info>, <queue_info>, <binding_info>,
  // <consumer_info>.
  void list_exchanges(uint64_t r) { send(list_atom::value, exchanges_atom::value, r); }
  void list_queues(uint64_t r) { send(list_atom::value, queues_atom::value, r); }
  void list_bindings(uint64_t r) { send(list_atom::value, bindings_atom::value, r); }
  void list_consumers(uint64_t r) { send(list_atom::value, consumers_atom::value, r); }

 private:
  template <class... Ts>
  void send(Ts&&... xs) {
    if (actor_) caf::anon_send(actor_, std::forward<Ts>(xs)...);
  }

  connection_requests actor_;
};

}  // namespace warren
