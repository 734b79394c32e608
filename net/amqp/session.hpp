// session: one AMQP 0-9-1 connection (see amqp_session.hpp for the whole picture). Private to
// net/amqp: its methods are spread over session.cpp (reading, the handshake, writing, the
// connection's life), session_channel.cpp (channel methods) and session_publish.cpp (publishes,
// confirms, returns, acks and deliveries).
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/storage/memory_ledger.hpp"
#include "core/clock.hpp"
#include "net/amqp/amqp_session.hpp"
#include "net/amqp/frame.hpp"
#include "net/amqp/methods.hpp"
#include "net/amqp/output_buffer.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

namespace warren::amqp {

using namespace methods;

/// Published messages a connection may have unanswered before its socket is no longer read.
constexpr size_t max_unanswered_messages = 20000;
/// Publishes gathered from one read are sent to the actor in batches of at most this many.
constexpr size_t max_publish_batch = 2000;
/// What one transaction may hold uncommitted: publishes (count and body bytes) and settlements.
constexpr size_t max_tx_messages = 65536;
constexpr uint64_t max_tx_bytes = uint64_t{64} << 20;
/// After sending connection.close, how long to wait for close-ok before dropping the socket.
constexpr int64_t close_grace_seconds = 2;

class session;

// The connection actor's way back, as in rpc_session: posted onto the loop, where the session
// may or may not still exist.
class amqp_link final : public client_link {
 public:
  amqp_link(std::shared_ptr<transport::loop_bridge> bridge, std::weak_ptr<session> s)
      : bridge_(std::move(bridge)), session_(std::move(s)) {}

  void reply(uint64_t request, caf::error error, request_answer answer) override;
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) override;
  void consumer_cancelled(uint16_t channel, const std::string& tag,
                          const std::string& reason) override;
  void channel_closed(uint16_t channel, uint64_t serial, const broker_failure& reason) override;
  void connection_closed(const broker_failure& reason) override;

 private:
  template <class F>
  void on_loop(F f);

  std::shared_ptr<transport::loop_bridge> bridge_;
  std::weak_ptr<session> session_;
};

class session : public std::enable_shared_from_this<session>,
                public kj::TaskSet::ErrorHandler,
                public flow_listener {
 public:
  session(kj::Own<kj::AsyncIoStream> stream, std::string peer, bool loopback,
          const session_config& config)
      : stream_(kj::mv(stream)),
        peer_(std::move(peer)),
        loopback_(loopback),
        config_(config),
        frame_max_(config.frame_max),
        tx_memory_(config.limits.ledger),
        tasks_(*this) {
    auto done = kj::newPromiseAndFulfiller<void>();
    finished_ = kj::mv(done.fulfiller);
    finished_promise_ = done.promise.fork();
  }

  ~session() { conn_.close(); }

  kj::Promise<void> run() {
    if (config_.flow) config_.flow->listen(weak_from_this());
    tasks_.add(read_loop());
    tasks_.add(handshake_deadline());
    return finished_promise_.addBranch();
  }

  // The node started or stopped holding back publishers.
  void flow_changed() override {
    if (phase_ != phase::running) return;
    bool blocked = config_.flow->blocked();
    if (blocked && wants_blocked_ && !told_blocked_) {
      auto w = method_payload(connection_blocked);
      w.short_string(config_.flow->reason().substr(0, 255));
      send_method(0, std::move(w));
      told_blocked_ = true;
    } else if (!blocked && told_blocked_) {
      send_method(0, method_payload(connection_unblocked));
      told_blocked_ = false;
    }
    if (!blocked) maybe_resume_reading();
    flush_output();
  }

  // --- from the connection actor (kj thread) ----------------------------------------------
  void complete(uint64_t request, caf::error error, request_answer answer);
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch);
  void consumer_cancelled(uint16_t channel, const std::string& tag);
  void connection_closed(const broker_failure& reason);
  void broker_closed_channel(uint16_t channel, uint64_t serial, const broker_failure& reason);

 private:
  enum class phase { header, start_ok, tune_ok, open, running, closing, done };

  struct incoming_publish {
    std::string exchange, routing_key;
    bool mandatory = false;
    bool have_header = false;
    uint64_t body_size = 0;
    basic_properties properties;
    std::string body;
  };
  // Publishes sent to the actor in one call; confirm tags are consecutive from first_tag.
  struct publish_call {
    size_t count = 0;
    // Mandatory messages by index in the call: the only ones that can come back as returns.
    std::vector<std::pair<size_t, message_ptr>> mandatory;
    uint64_t first_tag = 0;  // 0 when the channel is not in confirm mode
    std::vector<publish_outcome> outcomes;
    bool answered = false;
  };
  // A channel closes from either side (AMQP 0-9-1 2.2.4 and 4.2): once either close is on its
  // way, every frame on the channel but close and close-ok is discarded, and the channel is
  // forgotten when both closes that were sent have their close-ok.
  struct channel {
    bool closing = false;         // we sent channel.close and wait for its close-ok
    bool client_closing = false;  // the client sent channel.close; close-ok follows once the
                                  // broker's side of the channel has closed
    bool settling() const { return closing || client_closing; }
    uint64_t serial = 0;  // which channel.open of the connection this is (from 1)
    bool confirm = false;
    uint64_t next_confirm_tag = 0;
    std::optional<incoming_publish> publish;
    std::vector<message_ptr> gathered;  // complete publishes of this read, not yet sent
    std::map<uint64_t, std::shared_ptr<publish_call>> calls;  // in confirm order
    std::vector<uint64_t> acks;                               // single acks of this read
    method_id last_method;
    // A channel carries out its methods in order, as RabbitMQ's does: a get, declare, purge...
    // after publishes waits until the broker has taken them, and so does everything after it.
    size_t publishes_in_flight = 0;
    std::deque<frame> held;
    // tx.select: publishes and settlements wait here for tx.commit, and go at tx.rollback.
    struct tx_settle {
      method_id method;
      uint64_t tag;
      bool multiple;
      settle_kind kind;
    };
    bool tx = false;
    std::vector<message_ptr> tx_publishes;
    uint64_t tx_bytes = 0;    // memory tx_publishes take (tx_cost)
    uint64_t tx_counted = 0;  // what this channel's transaction adds to tx_held_
    std::vector<tx_settle> tx_settles;
  };
  // What runs on a request's answer (request_answer.hpp says what each request answers).
  using answer_handler = std::function<void(request_answer&)>;
  struct pending_request {
    uint16_t channel;
    method_id method;
    answer_handler done;
    size_t credit = 0;  // published messages this request answers for
  };

  // --- reading ------------------------------------------------------------------------------
  kj::Promise<void> read_loop();

  void process_input();

  // While the node holds publishers back, a basic.publish is not taken: reading stops before it.
  bool publish_held_back(const frame_view& f);

  void on_frame(const frame_view& f);

  // True when the frame must wait for the channel's publishes to be taken (it is then held).
  bool hold(const frame_view& f);

  // The channel's publishes were all taken: what waited for them runs now, in order.
  void release_held(uint16_t id);

  void on_content(const frame_view& f);

  void complete_publish(uint16_t id, channel& ch);

  // Sends what this read gathered: publishes as batches, single acks as one ackEach.
  void flush_channels();

  // `after` runs once the broker has answered for every message (after returns and confirms).
  /// `after` gets the outcome of each message once the broker answered.
  void send_publishes(uint16_t id, channel& ch,
                      std::function<void(const std::vector<publish_outcome>&)> after = nullptr);

  void published_answered(uint16_t id, publish_call& call);

  // Confirms go out in tag order: answered calls at the front are confirmed, runs of acks as
  // one ack with `multiple`.
  void send_confirms(uint16_t id, channel& ch);

  void send_ack_or_nack(uint16_t id, method_id which, uint64_t tag, bool multiple);

  void send_return(uint16_t id, const message_ptr& m);

  void send_acks(uint16_t id, channel& ch);

  // --- methods ------------------------------------------------------------------------------
  void on_method(uint16_t id, std::string_view payload);

  void on_connection_method(method_id m, reader& r);

  void send_start();

  void on_start_ok(reader& r);

  void on_tune_ok(reader& r);

  void on_open(reader& r);
  void on_update_secret(reader& r);

  void open_channel(uint16_t id);

  void forget_channel(uint16_t id);

  void on_channel_method(uint16_t id, channel& ch, method_id m, reader& r);

  // One handler per channel method (session_channel.cpp, session_tx.cpp); `m` is the method
  // read, for handlers that serve several.
  using method_handler = void (session::*)(uint16_t id, channel& ch, method_id m, reader& r);
  static const std::vector<std::pair<method_id, method_handler>>& channel_methods();
  answer_handler answer_with(uint16_t id, method_id ok, bool no_wait);
  void on_basic_publish(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_ack(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_nack_or_reject(uint16_t id, channel& ch, method_id m, reader& r);
  void on_channel_close(uint16_t id, channel& ch, method_id m, reader& r);
  void on_channel_close_ok(uint16_t id, channel& ch, method_id m, reader& r);
  void on_channel_flow(uint16_t id, channel& ch, method_id m, reader& r);
  void on_exchange_declare(uint16_t id, channel& ch, method_id m, reader& r);
  void on_exchange_delete(uint16_t id, channel& ch, method_id m, reader& r);
  void on_binding(uint16_t id, channel& ch, method_id m, reader& r);
  void on_queue_declare(uint16_t id, channel& ch, method_id m, reader& r);
  void on_queue_purge_or_delete(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_qos(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_consume(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_cancel(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_get(uint16_t id, channel& ch, method_id m, reader& r);
  void on_basic_recover(uint16_t id, channel& ch, method_id m, reader& r);
  void on_confirm_select(uint16_t id, channel& ch, method_id m, reader& r);
  /// Puts what `ch`'s transaction now holds into the memory ledger.
  void recount_tx(channel& ch);
  void on_tx_select(uint16_t id, channel& ch, method_id m, reader& r);
  void on_tx_commit(uint16_t id, channel& ch, method_id m, reader& r);
  void on_tx_rollback(uint16_t id, channel& ch, method_id m, reader& r);

  // Sends one ack / nack / reject to the connection actor; `done` runs on its answer.
  void send_settle(uint16_t id, method_id m, uint64_t tag, bool multiple, settle_kind kind,
                   answer_handler done);

  // --- requests to the connection actor -----------------------------------------------------
  template <class Send>
  void request(uint16_t channel, method_id method, answer_handler done, Send&& send,
               size_t credit = 0) {
    auto r = ++next_request_;
    pending_.emplace(r, pending_request{channel, method, std::move(done), credit});
    send(r);
  }

  // Runs `p`'s continuation on its answer.
  void run_done(const pending_request& p, request_answer& answer);

  // --- errors -------------------------------------------------------------------------------
  void channel_error(uint16_t id, reply_code code, const std::string& text, method_id method);

  void connection_error(reply_code code, const std::string& text, method_id method);

  static std::string reply_text(reply_code code, const std::string& text);

  // --- writing ------------------------------------------------------------------------------
  void send_method(uint16_t channel, writer w);

  void send_content(uint16_t channel, const std::string& method, const message_ptr& m);

  void send_raw(std::string bytes);

  void schedule_flush();

  // One write at a time; what accumulates meanwhile goes in the next one.
  void flush_output();

  void finish_after_flush(const std::string& reason);
  void end_after_flush();

  void finish(const std::string& reason);

  void release_credit(size_t n);

  // A connection that publishes is not read while the node holds publishers back (consumers
  // are: acking is what frees memory); nor while too much of what it sent is unanswered.
  bool must_pause_reading() const;

  void maybe_resume_reading();

  kj::Promise<void> heartbeat_loop();

  // Closes the connection if it has not opened its vhost within the handshake timeout.
  kj::Promise<void> handshake_deadline();

  void taskFailed(kj::Exception&& e) override { finish(e.getDescription().cStr()); }

  kj::Own<kj::AsyncIoStream> stream_;
  std::string peer_;
  bool loopback_;
  session_config config_;
  phase phase_ = phase::header;
  uint32_t frame_max_;
  uint16_t channel_max_ = 0;
  uint16_t heartbeat_ = 0;
  std::string user_, password_, vhost_, client_name_;
  connection_ref conn_;
  std::map<uint16_t, channel> channels_;
  // What uncommitted transactions hold, in the node's memory ledger like what queues hold.
  uint64_t tx_held_ = 0;
  memory_share tx_memory_;
  uint64_t channel_opens_ = 0;  // the connection actor counts them the same way
  uint64_t next_request_ = 0;
  std::unordered_map<uint64_t, pending_request> pending_;
  size_t unanswered_ = 0;
  bool has_published_ = false;
  bool input_held_ = false;     // complete frames wait in input_ for the alarm to clear
  bool wants_blocked_ = false;  // the client announced the connection.blocked capability
  bool told_blocked_ = false;
  kj::Own<kj::PromiseFulfiller<void>> resume_reading_;
  char read_buffer_[65536];
  std::string input_;
  output_buffer output_;
  std::vector<std::tuple<uint16_t, std::string, uint32_t>> unflushed_;  // deliveries in output_
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool after_flush_ = false;
  std::string after_flush_reason_;
  // The method whose frames are being read, named (class and method ids) in a connection.close
  // for an error in them, as RabbitMQ does; 0/0 for a frame that belongs to none.
  method_id current_method_{};
  bool drain_after_flush_ = false;  // the client closed: drain its input before the socket goes
  bool draining_ = false;
  bool secret_in_flight_ = false;  // an update-secret waits for the node's answer
  int64_t last_read_ms_ = steady_ms();
  int64_t last_write_ms_ = steady_ms();
  kj::Own<kj::PromiseFulfiller<void>> finished_;
  kj::ForkedPromise<void> finished_promise_ = nullptr;
  kj::TaskSet tasks_;

  friend class amqp_link;
};

}  // namespace warren::amqp
