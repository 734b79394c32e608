// rpc_session: the kj-side half of one client connection over Cap'n Proto.
//
// It owns the connection actor's handle, matches replies to outstanding calls by request id,
// holds the consumers' capabilities and sends deliveries to them as deliver calls, no more
// than each consumer's delivery window allows (broker.capnp, DeliveryWindow); a call that
// throws cancels its consumer. It lives on the kj thread;
// the connection actor reaches it only through rpc_link (a client_link) which posts onto the
// loop. When the last Cap'n Proto reference to the connection goes (client closed, or its
// socket died) the session is destroyed and the connection actor is told to close, which
// requeues everything the client had not acknowledged.
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/connection_protocol.hpp"
#include "broker.capnp.h"
#include "net/capnp/pending_answers.hpp"
#include "transport/loop_bridge.hpp"

#include <kj/async.h>
#include <caf/actor_system.hpp>

#include <deque>
#include <map>
#include <memory>
#include <set>

namespace warren::net {

class rpc_session : public std::enable_shared_from_this<rpc_session>,
                    public kj::TaskSet::ErrorHandler {
 public:
  /// kj thread. Spawns the connection actor; open() must succeed before use.
  static std::shared_ptr<rpc_session> create(caf::actor_system& system, caf::actor node,
                                             std::shared_ptr<transport::loop_bridge> bridge,
                                             client_hello hello);
  ~rpc_session();

  rpc_session(const rpc_session&) = delete;
  rpc_session& operator=(const rpc_session&) = delete;

  /// The connection actor, through its protocol.
  connection_ref& conn() { return conn_; }

  /// kj thread. A new session for the same client (node, loop, peer) logging in by a grant's
  /// `token`; open() must succeed before use.
  std::shared_ptr<rpc_session> open_by_token(std::string token) const;

  /// Sends a request to the connection actor: `send(request_id)` must send one message that
  /// carries the id. The promise resolves with the actor's answer, or rejects with the broker
  /// error ("NOT_FOUND: ...").
  template <class Send>
  kj::Promise<request_answer> request(Send&& send) {
    if (gone_) return to_exception(gone_reason_);
    auto pending = answers_.open();
    send(pending.id);
    return kj::mv(pending.answer);
  }

  uint16_t allocate_channel() {
    if (++next_channel_ == 0) ++next_channel_;  // channel 0 is the connection's own in AMQP
    return next_channel_;
  }

  /// How a consumer's deliveries are cut into deliver calls (broker.capnp, DeliveryWindow).
  struct delivery_window {
    uint32_t max_calls = 4;    // deliver calls sent and not yet returned
    uint32_t max_batch = 256;  // deliveries per call
  };

  /// Registers a consumer capability; false (and nothing changes) when the tag is taken.
  bool add_consumer(uint16_t channel, const std::string& tag, rpc::Consumer::Client consumer,
                    delivery_window window);
  void remove_consumer(uint16_t channel, const std::string& tag);

  /// True (once) when the broker has closed `channel` after an error since the last ask; a
  /// grant's hidden channel is then opened again (rpc_grants.cpp).
  bool take_broker_closed(uint16_t channel) { return broker_closed_.erase(channel) != 0; }
  void mark_broker_closed(uint16_t channel) { broker_closed_.insert(channel); }

  // --- called on the kj thread through rpc_link -------------------------------------------
  void complete(uint64_t request, caf::error error, request_answer answer);
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch);
  void consumer_cancelled(uint16_t channel, const std::string& tag, const std::string& reason);
  void channel_closed(uint16_t channel, const broker_failure& reason);
  void actor_gone(broker_failure reason);

 private:
  rpc_session(caf::actor_system& system, caf::actor node,
              std::shared_ptr<transport::loop_bridge> bridge, const client_hello& hello);
  void taskFailed(kj::Exception&& exception) override;
  static kj::Exception to_exception(const broker_failure& f);

  using consumer_key = std::pair<uint16_t, std::string>;
  // A consumer's capability and the deliveries waiting for a free call.
  struct consumer_pipe {
    rpc::Consumer::Client cap;
    delivery_window window;
    uint32_t calls_in_flight = 0;
    std::deque<delivery> waiting;
  };
  void send_calls(const consumer_key& key, consumer_pipe& pipe);
  void call_returned(const consumer_key& key, uint32_t deliveries);
  void call_failed(const consumer_key& key, const kj::Exception& e);

  caf::actor_system& system_;
  caf::actor node_;
  std::shared_ptr<transport::loop_bridge> bridge_;
  client_hello origin_;  // who connected, without credentials: for sessions opened by token
  connection_ref conn_;
  pending_answers<request_answer> answers_;  // of conn_
  uint16_t next_channel_ = 0;
  std::map<consumer_key, consumer_pipe> consumers_;
  std::set<uint16_t> broker_closed_;  // channels the broker closed (bounded by channel ids)
  std::string client_name_;           // for the log
  bool gone_ = false;
  broker_failure gone_reason_;
  kj::TaskSet tasks_;
};

}  // namespace warren::net
