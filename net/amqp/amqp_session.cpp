#include "net/amqp/amqp_session.hpp"

#include "actors/client_link.hpp"
#include "actors/connection_actor.hpp"
#include "actors/log.hpp"
#include "actors/names.hpp"
#include "actors/protocol.hpp"
#include "net/amqp/frame.hpp"
#include "net/amqp/properties.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>

namespace warren::amqp {

namespace {

// Method ids used here, by class.
constexpr method_id connection_start{10, 10}, connection_start_ok{10, 11},
    connection_secure_ok{10, 21}, connection_tune{10, 30}, connection_tune_ok{10, 31},
    connection_open{10, 40}, connection_open_ok{10, 41}, connection_close{10, 50},
    connection_close_ok{10, 51}, connection_blocked{10, 60}, connection_unblocked{10, 61};
constexpr method_id channel_open{20, 10}, channel_open_ok{20, 11}, channel_flow{20, 20},
    channel_flow_ok{20, 21}, channel_close{20, 40}, channel_close_ok{20, 41};
constexpr method_id exchange_declare{40, 10}, exchange_declare_ok{40, 11}, exchange_delete{40, 20},
    exchange_delete_ok{40, 21};
constexpr method_id queue_declare{50, 10}, queue_declare_ok{50, 11}, queue_bind{50, 20},
    queue_bind_ok{50, 21}, queue_purge{50, 30}, queue_purge_ok{50, 31}, queue_delete{50, 40},
    queue_delete_ok{50, 41}, queue_unbind{50, 50}, queue_unbind_ok{50, 51};
constexpr method_id basic_qos{60, 10}, basic_qos_ok{60, 11}, basic_consume{60, 20},
    basic_consume_ok{60, 21}, basic_cancel{60, 30}, basic_cancel_ok{60, 31}, basic_publish{60, 40},
    basic_return{60, 50}, basic_deliver{60, 60}, basic_get{60, 70}, basic_get_ok{60, 71},
    basic_get_empty{60, 72}, basic_ack{60, 80}, basic_reject{60, 90}, basic_recover_async{60, 100},
    basic_recover{60, 110}, basic_recover_ok{60, 111}, basic_nack{60, 120};
constexpr method_id confirm_select{85, 10}, confirm_select_ok{85, 11};

/// Largest message body accepted (RabbitMQ's default max_message_size).
constexpr uint64_t max_body_size = 128ull << 20;
/// Published messages a connection may have unanswered before its socket is no longer read.
constexpr size_t max_unanswered_messages = 20000;
/// Publishes gathered from one read are sent to the actor in batches of at most this many.
constexpr size_t max_publish_batch = 2000;
/// After sending connection.close, how long to wait for close-ok before dropping the socket.
constexpr int64_t close_grace_seconds = 2;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class session;

// The connection actor's way back, as in rpc_session: posted onto the loop, where the session
// may or may not still exist.
class amqp_link final : public client_link {
 public:
  amqp_link(std::shared_ptr<net::loop_bridge> bridge, std::weak_ptr<session> s)
      : bridge_(std::move(bridge)), session_(std::move(s)) {}

  void reply(uint64_t request, caf::error error, caf::message result) override;
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) override;
  void consumer_cancelled(uint16_t channel, const std::string& tag,
                          const std::string& reason) override;
  void channel_closed(uint16_t channel, const broker_failure& reason) override;
  void connection_closed(const broker_failure& reason) override;

 private:
  template <class F>
  void on_loop(F f);

  std::shared_ptr<net::loop_bridge> bridge_;
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
        tasks_(*this) {
    auto done = kj::newPromiseAndFulfiller<void>();
    finished_ = kj::mv(done.fulfiller);
    finished_promise_ = done.promise.fork();
  }

  ~session() {
    if (actor_) caf::anon_send(actor_, close_atom::value, uint64_t{0});
  }

  kj::Promise<void> run() {
    if (config_.flow) config_.flow->listen(weak_from_this());
    tasks_.add(read_loop());
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
  void complete(uint64_t request, caf::error error, caf::message result);
  void deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch);
  void consumer_cancelled(uint16_t channel, const std::string& tag);
  void channel_closed(uint16_t channel, const broker_failure& reason);
  void connection_closed(const broker_failure& reason);

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
    std::vector<message_ptr> msgs;
    uint64_t first_tag = 0;  // 0 when the channel is not in confirm mode
    std::vector<uint8_t> outcomes;
    bool answered = false;
  };
  struct channel {
    bool closing = false;  // we sent channel.close and wait for close-ok
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
  };
  struct pending_request {
    uint16_t channel;
    method_id method;
    std::function<void(caf::message&)> done;
    size_t credit = 0;  // published messages this request answers for
  };

  // --- reading ------------------------------------------------------------------------------
  kj::Promise<void> read_loop() {
    if (phase_ == phase::done) return kj::READY_NOW;
    if (input_held_ && !must_pause_reading()) {
      // Frames left in the buffer while publishers were held back go before reading more.
      input_held_ = false;
      process_input();
      return read_loop();
    }
    if (must_pause_reading()) {
      // The broker has not taken what this publisher sent, or the node holds publishers back:
      // stop reading until that changes.
      auto paf = kj::newPromiseAndFulfiller<void>();
      resume_reading_ = kj::mv(paf.fulfiller);
      return paf.promise.then([this] { return read_loop(); });
    }
    return stream_->tryRead(read_buffer_, 1, sizeof read_buffer_)
        .then([this](size_t n) -> kj::Promise<void> {
          if (n == 0) {
            finish("the client closed the socket");
            return kj::READY_NOW;
          }
          last_read_ms_ = now_ms();
          input_.append(read_buffer_, n);
          process_input();
          return read_loop();
        });
  }

  void process_input() {
    size_t at = 0;
    try {
      if (phase_ == phase::header) {
        if (input_.size() < protocol_header.size()) return;
        if (std::string_view(input_).substr(0, protocol_header.size()) != protocol_header) {
          // Spec 4.2.2: answer with the protocol we speak, then close.
          send_raw(std::string(protocol_header));
          finish_after_flush("the client did not open with the AMQP 0-9-1 protocol header");
          return;
        }
        at = protocol_header.size();
        send_start();
        phase_ = phase::start_ok;
      }
      size_t used = 0;
      while (phase_ != phase::done) {
        auto f = parse_frame_view(std::string_view(input_).substr(at), frame_max_, used);
        if (!f) break;
        if (publish_held_back(*f)) {  // stays in the buffer until the alarm clears
          input_held_ = true;
          break;
        }
        at += used;
        on_frame(*f);
      }
    } catch (const protocol_error& e) {
      connection_error(e.code, e.what(), {});
    }
    input_.erase(0, at);
    if (phase_ == phase::closing && input_.size() > frame_max_ + frame_overhead)
      input_.clear();  // after a framing error nothing more is parsed
    flush_channels();
  }

  // While the node holds publishers back, a basic.publish is not taken: reading stops before it.
  bool publish_held_back(const frame_view& f) {
    if (!config_.flow || !config_.flow->blocked() || phase_ != phase::running) return false;
    if (f.type != frame_type::method || f.channel == 0 || f.payload.size() < 4) return false;
    reader r(f.payload);
    method_id m{r.short_uint(), r.short_uint()};
    if (!(m == basic_publish)) return false;
    has_published_ = true;
    return true;
  }

  void on_frame(const frame_view& f) {
    if (phase_ == phase::closing) {
      // Only the close handshake counts now (spec 2.2.4).
      if (f.type == frame_type::method && f.channel == 0) {
        reader r(f.payload);
        method_id id{r.short_uint(), r.short_uint()};
        if (id == connection_close_ok) finish("connection closed");
        if (id == connection_close) {
          send_method(0, method_payload(connection_close_ok));
          finish_after_flush("connection closed");
        }
      }
      return;
    }
    if (f.type == frame_type::heartbeat) return;
    if (f.channel != 0 && hold(f)) return;
    if (f.type == frame_type::method) return on_method(f.channel, f.payload);
    on_content(f);
  }

  // True when the frame must wait for the channel's publishes to be taken (it is then held).
  bool hold(const frame_view& f) {
    auto c = channels_.find(f.channel);
    if (c == channels_.end() || c->second.closing) return false;
    auto& ch = c->second;
    if (!ch.held.empty()) {
      ch.held.push_back(f.owned());
      return true;
    }
    if (f.type != frame_type::method || ch.publish) return false;
    reader r(f.payload);
    method_id m{r.short_uint(), r.short_uint()};
    if (m == basic_publish || m == basic_ack || m == basic_nack || m == basic_reject ||
        m == channel_close)
      return false;
    send_publishes(f.channel, ch);
    if (ch.publishes_in_flight == 0) return false;
    ch.held.push_back(f.owned());
    return true;
  }

  // The channel's publishes were all taken: what waited for them runs now, in order.
  void release_held(uint16_t id) {
    auto c = channels_.find(id);
    if (c == channels_.end()) return;
    auto held = std::move(c->second.held);
    c->second.held.clear();
    try {
      while (!held.empty() && phase_ == phase::running) {
        auto f = std::move(held.front());
        held.pop_front();
        on_frame(frame_view::of(f));
        c = channels_.find(id);
        if (c == channels_.end()) return;
        if (!c->second.held.empty()) {
          // Held again: the rest waits behind it.
          for (auto& rest : held) c->second.held.push_back(std::move(rest));
          break;
        }
      }
    } catch (const protocol_error& e) {
      connection_error(e.code, e.what(), {});
    }
    flush_channels();
  }

  void on_content(const frame_view& f) {
    auto c = channels_.find(f.channel);
    if (c == channels_.end() || !c->second.publish)
      throw protocol_error(
          reply_code::unexpected_frame,
          std::string(f.type == frame_type::header ? "content header" : "content body") +
              " frame on channel " + std::to_string(f.channel) +
              " without a basic.publish before it");
    auto& ch = c->second;
    auto& p = *ch.publish;
    if (f.type == frame_type::header) {
      if (p.have_header)
        throw protocol_error(
            reply_code::unexpected_frame,
            "a second content header for one publish on channel " + std::to_string(f.channel));
      auto h = parse_content_header(f.payload);
      if (h.class_id != 60)
        throw protocol_error(
            reply_code::command_invalid,
            "content header of class " + std::to_string(h.class_id) + " for basic.publish");
      p.have_header = true;
      p.body_size = h.body_size;
      p.properties = std::move(h.properties);
      if (p.body_size > max_body_size) {
        ch.publish.reset();
        return channel_error(f.channel, reply_code::precondition_failed,
                             "message size " + std::to_string(h.body_size) +
                                 " is larger than the maximum of " + std::to_string(max_body_size),
                             basic_publish);
      }
      p.body.reserve(p.body_size);
    } else {
      if (!p.have_header)
        throw protocol_error(
            reply_code::unexpected_frame,
            "content body before its header on channel " + std::to_string(f.channel));
      if (p.body.size() + f.payload.size() > p.body_size)
        throw protocol_error(reply_code::frame_error, "content body longer than the " +
                                                          std::to_string(p.body_size) +
                                                          " bytes its header announced");
      p.body += f.payload;
    }
    if (p.have_header && p.body.size() == p.body_size) complete_publish(f.channel, ch);
  }

  void complete_publish(uint16_t id, channel& ch) {
    auto p = std::move(*ch.publish);
    ch.publish.reset();
    message_properties props;
    try {
      props = to_message_properties(p.properties);
    } catch (const protocol_error& e) {
      return channel_error(id, reply_code::precondition_failed, e.what(), basic_publish);
    }
    auto m = std::make_shared<message>();
    m->id = next_message_id();
    m->exchange = std::move(p.exchange);
    m->routing_key = std::move(p.routing_key);
    m->mandatory = p.mandatory;
    m->body = std::move(p.body);
    m->set_properties(std::move(props));
    ch.gathered.push_back(std::move(m));
    if (ch.gathered.size() >= max_publish_batch) send_publishes(id, ch);
  }

  // Sends what this read gathered: publishes as batches, single acks as one ackEach.
  void flush_channels() {
    for (auto& [id, ch] : channels_) {
      if (ch.closing) continue;
      send_publishes(id, ch);
      send_acks(id, ch);
    }
    flush_output();
  }

  void send_publishes(uint16_t id, channel& ch) {
    if (ch.gathered.empty()) return;
    auto call = std::make_shared<publish_call>();
    call->msgs = std::move(ch.gathered);
    ch.gathered.clear();
    if (ch.confirm) {
      call->first_tag = ch.next_confirm_tag + 1;
      ch.next_confirm_tag += call->msgs.size();
      ch.calls.emplace(call->first_tag, call);
    }
    unanswered_ += call->msgs.size();
    ++ch.publishes_in_flight;
    auto msgs = call->msgs;
    request(
        id, basic_publish,
        [this, id, call](caf::message& m) {
          call->outcomes = m.get_as<std::vector<uint8_t>>(0);
          call->answered = true;
          published_answered(id, *call);
        },
        [&](uint64_t r) { caf::anon_send(actor_, publish_atom::value, r, id, std::move(msgs)); },
        call->msgs.size());
  }

  void published_answered(uint16_t id, publish_call& call) {
    auto c = channels_.find(id);
    if (c == channels_.end() || c->second.closing) return;
    for (size_t i = 0; i < call.msgs.size() && i < call.outcomes.size(); ++i)
      if (call.outcomes[i] == static_cast<uint8_t>(publish_outcome::returned))
        send_return(id, *call.msgs[i]);
    if (call.first_tag != 0) send_confirms(id, c->second);
    flush_output();
  }

  // Confirms go out in tag order: answered calls at the front are confirmed, runs of acks as
  // one ack with `multiple`.
  void send_confirms(uint16_t id, channel& ch) {
    uint64_t multi_upto = 0;
    auto flush_multi = [&] {
      if (multi_upto == 0) return;
      send_ack_or_nack(id, basic_ack, multi_upto, true);
      multi_upto = 0;
    };
    while (!ch.calls.empty() && ch.calls.begin()->second->answered) {
      auto call = ch.calls.begin()->second;
      ch.calls.erase(ch.calls.begin());
      for (size_t i = 0; i < call->msgs.size(); ++i) {
        uint64_t tag = call->first_tag + i;
        bool nack = i < call->outcomes.size() &&
                    call->outcomes[i] == static_cast<uint8_t>(publish_outcome::rejected);
        if (!nack) {
          multi_upto = tag;
          continue;
        }
        flush_multi();
        send_ack_or_nack(id, basic_nack, tag, false);
      }
    }
    flush_multi();
  }

  void send_ack_or_nack(uint16_t id, method_id which, uint64_t tag, bool multiple) {
    auto w = method_payload(which);
    w.longlong_uint(tag);
    w.bits(which == basic_nack ? std::vector<bool>{multiple, false} : std::vector<bool>{multiple});
    send_method(id, std::move(w));
  }

  void send_return(uint16_t id, const message& m) {
    auto w = method_payload(basic_return);
    w.short_uint(static_cast<uint16_t>(reply_code::no_route));
    w.short_string("NO_ROUTE");
    w.short_string(m.exchange);
    w.short_string(m.routing_key);
    send_content(id, w.bytes(), m);
  }

  void send_acks(uint16_t id, channel& ch) {
    if (ch.acks.empty()) return;
    auto tags = std::move(ch.acks);
    ch.acks.clear();
    request(id, basic_ack, nullptr, [&](uint64_t r) {
      caf::anon_send(actor_, settle_atom::value, r, id, std::move(tags));
    });
  }

  // --- methods ------------------------------------------------------------------------------
  void on_method(uint16_t id, std::string_view payload) {
    reader r(payload);
    method_id m{r.short_uint(), r.short_uint()};
    if (id == 0) return on_connection_method(m, r);
    if (phase_ != phase::running)
      throw protocol_error(
          reply_code::command_invalid,
          method_name(m) + " on channel " + std::to_string(id) + " before the connection is open");
    if (id > channel_max_)
      throw protocol_error(reply_code::channel_error, "channel " + std::to_string(id) +
                                                          " is above the negotiated maximum " +
                                                          std::to_string(channel_max_));
    if (m == channel_open) return open_channel(id);
    auto c = channels_.find(id);
    if (c == channels_.end())
      throw protocol_error(
          reply_code::channel_error,
          method_name(m) + " on channel " + std::to_string(id) + ", which is not open");
    auto& ch = c->second;
    if (ch.closing) {
      if (m == channel_close_ok) forget_channel(id);
      if (m == channel_close) send_method(id, method_payload(channel_close_ok));
      return;
    }
    if (ch.publish)
      throw protocol_error(reply_code::unexpected_frame,
                           method_name(m) + " on channel " + std::to_string(id) +
                               " while the content of a basic.publish was expected");
    ch.last_method = m;
    // Publishes and acks gathered so far go first, in the order the client sent them.
    if (!(m == basic_publish)) {
      send_publishes(id, ch);
      if (!(m == basic_ack)) send_acks(id, ch);
    }
    on_channel_method(id, ch, m, r);
  }

  void on_connection_method(method_id m, reader& r) {
    if (m == connection_start_ok && phase_ == phase::start_ok) return on_start_ok(r);
    if (m == connection_secure_ok)
      throw protocol_error(reply_code::not_implemented, "no mechanism here uses connection.secure");
    if (m == connection_tune_ok && phase_ == phase::tune_ok) return on_tune_ok(r);
    if (m == connection_open && phase_ == phase::open) return on_open(r);
    if (m == connection_close) {
      auto code = r.short_uint();
      auto text = r.short_string();
      log(log_level::debug, "amqp",
          "client " + peer_ + " closed the connection (" + std::to_string(code) + " " + text + ")");
      send_method(0, method_payload(connection_close_ok));
      finish_after_flush("closed by the client");
      return;
    }
    if (m == connection_close_ok) {
      finish("connection closed");
      return;
    }
    throw protocol_error(reply_code::command_invalid,
                         "unexpected " + method_name(m) + " on channel 0");
  }

  void send_start() {
    table capabilities{{"publisher_confirms", value::of_bool(true)},
                       {"basic.nack", value::of_bool(true)},
                       {"consumer_cancel_notify", value::of_bool(true)},
                       {"per_consumer_qos", value::of_bool(true)},
                       {"authentication_failure_close", value::of_bool(true)},
                       {"exchange_exchange_bindings", value::of_bool(false)},
                       {"connection.blocked", value::of_bool(true)}};
    table props{{"product", value::of_string("Warren")},
                {"version", value::of_string("0.1")},
                {"platform", value::of_string("C++ (CAF, Cap'n Proto)")},
                {"information", value::of_string("https://warren.invalid/ AMQP 0-9-1 listener")},
                {"capabilities", value::of_table(std::move(capabilities))}};
    auto w = method_payload(connection_start);
    w.octet(0);
    w.octet(9);
    w.field_table(props);
    w.long_string("PLAIN AMQPLAIN");
    w.long_string("en_US");
    send_method(0, std::move(w));
  }

  void on_start_ok(reader& r) {
    auto client_props = r.field_table();
    auto mechanism = r.short_string();
    auto response = r.long_string();
    r.short_string();  // locale
    for (const auto& [key, v] : client_props) {
      if (key == "capabilities" && v.type == 'F')
        for (const auto& [cap, on] : *v.nested_table)
          if (cap == "connection.blocked" && on.type == 't') wants_blocked_ = on.boolean;
      if (key == "connection_name" && v.type == 'S') client_name_ = v.bytes;
      if (key == "product" && v.type == 'S' && client_name_.empty()) client_name_ = v.bytes;
    }
    if (client_name_.empty()) client_name_ = "amqp " + peer_;
    if (mechanism == "PLAIN") {
      // authzid NUL authcid NUL password
      auto first = response.find('\0');
      auto second = first == std::string::npos ? first : response.find('\0', first + 1);
      if (second == std::string::npos)
        return connection_error(reply_code::access_refused,
                                "PLAIN response is not authzid NUL user NUL password",
                                connection_start_ok);
      user_ = response.substr(first + 1, second - first - 1);
      password_ = response.substr(second + 1);
    } else if (mechanism == "AMQPLAIN") {
      writer w;
      w.long_string(response);  // a table without its length: give it one
      auto t = reader(w.bytes()).field_table();
      for (const auto& [key, v] : t) {
        if (key == "LOGIN") user_ = v.bytes;
        if (key == "PASSWORD") password_ = v.bytes;
      }
    } else {
      return connection_error(reply_code::access_refused,
                              "authentication mechanism " + quote(mechanism) +
                                  " is not supported (PLAIN and AMQPLAIN are)",
                              connection_start_ok);
    }
    if (user_ == "guest" && !loopback_)
      return connection_error(reply_code::access_refused,
                              "user 'guest' may only connect from a loopback address",
                              connection_start_ok);
    auto w = method_payload(connection_tune);
    w.short_uint(config_.channel_max);
    w.long_uint(config_.frame_max);
    w.short_uint(config_.heartbeat_seconds);
    send_method(0, std::move(w));
    phase_ = phase::tune_ok;
  }

  void on_tune_ok(reader& r) {
    auto channel_max = r.short_uint();
    auto frame_max = r.long_uint();
    auto heartbeat = r.short_uint();
    channel_max_ = channel_max == 0 ? config_.channel_max
                                    : std::min<uint16_t>(channel_max, config_.channel_max);
    if (frame_max != 0 && frame_max < frame_min_size)
      return connection_error(reply_code::not_allowed,
                              "frame_max " + std::to_string(frame_max) +
                                  " is below the minimum of " + std::to_string(frame_min_size),
                              connection_tune_ok);
    frame_max_ = frame_max == 0 ? config_.frame_max : std::min(frame_max, config_.frame_max);
    heartbeat_ = heartbeat;
    if (heartbeat_ > 0) tasks_.add(heartbeat_loop());
    phase_ = phase::open;
  }

  void on_open(reader& r) {
    vhost_ = r.short_string();
    client_hello hello{vhost_, user_, password_, client_name_, peer_};
    auto link = std::make_shared<amqp_link>(config_.bridge, weak_from_this());
    actor_ = config_.system->spawn(connection_actor, config_.node, link, std::move(hello));
    std::weak_ptr<session> weak = weak_from_this();
    auto bridge = config_.bridge;
    actor_->attach_functor([bridge, weak]() {
      bridge->post([weak]() {
        if (auto s = weak.lock())
          s->connection_closed({reply_code::connection_forced, "the broker closed the connection"});
      });
    });
    request(
        0, connection_open,
        [this](caf::message&) {
          auto w = method_payload(connection_open_ok);
          w.short_string("");
          send_method(0, std::move(w));
          phase_ = phase::running;
          if (config_.flow && config_.flow->blocked()) flow_changed();
        },
        [&](uint64_t r) { caf::anon_send(actor_, open_atom::value, r); });
  }

  void open_channel(uint16_t id) {
    if (channels_.count(id) != 0)
      throw protocol_error(reply_code::channel_error,
                           "channel " + std::to_string(id) + " is already open");
    channels_[id];
    request(
        id, channel_open,
        [this, id](caf::message&) {
          auto w = method_payload(channel_open_ok);
          w.long_string("");
          send_method(id, std::move(w));
        },
        [&](uint64_t r) { caf::anon_send(actor_, open_atom::value, r, id); });
  }

  void forget_channel(uint16_t id) {
    auto c = channels_.find(id);
    if (c == channels_.end()) return;
    for (const auto& [tag, call] : c->second.calls)
      if (!call->answered) call->first_tag = 0;  // no confirms for a closed channel
    channels_.erase(c);
  }

  void on_channel_method(uint16_t id, channel& ch, method_id m, reader& r);

  // --- requests to the connection actor -----------------------------------------------------
  template <class Send>
  void request(uint16_t channel, method_id method, std::function<void(caf::message&)> done,
               Send&& send, size_t credit = 0) {
    auto r = ++next_request_;
    pending_.emplace(r, pending_request{channel, method, std::move(done), credit});
    send(r);
  }

  // --- errors -------------------------------------------------------------------------------
  void channel_error(uint16_t id, reply_code code, const std::string& text, method_id method) {
    auto c = channels_.find(id);
    if (c == channels_.end() || c->second.closing) return;
    c->second.closing = true;
    c->second.publish.reset();
    c->second.gathered.clear();
    c->second.acks.clear();
    // The broker side of the channel goes too: its unacked messages are requeued.
    caf::anon_send(actor_, close_atom::value, uint64_t{0}, id);
    auto w = method_payload(channel_close);
    w.short_uint(static_cast<uint16_t>(code));
    w.short_string(reply_text(code, text));
    w.short_uint(method.class_id);
    w.short_uint(method.method);
    send_method(id, std::move(w));
    flush_output();
  }

  void connection_error(reply_code code, const std::string& text, method_id method) {
    if (phase_ == phase::closing || phase_ == phase::done) return;
    log(log_level::info, "amqp",
        "closing connection from " + peer_ + ": " + reply_code_name(code) + " - " + text);
    auto w = method_payload(connection_close);
    w.short_uint(static_cast<uint16_t>(code));
    w.short_string(reply_text(code, text));
    w.short_uint(method.class_id);
    w.short_uint(method.method);
    send_method(0, std::move(w));
    phase_ = phase::closing;
    flush_output();
    if (actor_) caf::anon_send(actor_, close_atom::value, uint64_t{0});
    tasks_.add(config_.timer->afterDelay(close_grace_seconds * kj::SECONDS).then([this] {
      finish("no connection.close-ok in time");
    }));
  }

  static std::string reply_text(reply_code code, const std::string& text) {
    std::string out = std::string(reply_code_name(code)) + " - " + text;
    if (out.size() > 255) out.resize(255);
    return out;
  }

  // --- writing ------------------------------------------------------------------------------
  void send_method(uint16_t channel, writer w) {
    write_frame(output_, frame_type::method, channel, w.bytes());
    schedule_flush();
  }

  void send_content(uint16_t channel, const std::string& method, const message& m) {
    content_header h;
    h.body_size = m.body.size();
    h.properties = to_basic_properties(m.properties());
    write_content(output_, channel, method, h, m.body, frame_max_);
    schedule_flush();
  }

  void send_raw(std::string bytes) {
    output_ += bytes;
    schedule_flush();
  }

  void schedule_flush() {
    if (flush_scheduled_) return;
    flush_scheduled_ = true;
    tasks_.add(kj::evalLater([this] {
      flush_scheduled_ = false;
      flush_output();
    }));
  }

  // One write at a time; what accumulates meanwhile goes in the next one.
  void flush_output() {
    if (writing_ || output_.empty() || phase_ == phase::done) return;
    writing_ = true;
    last_write_ms_ = now_ms();
    // Two buffers take turns, so their capacity is reused rather than reallocated per write.
    std::swap(output_, in_flight_);
    output_.clear();
    auto flushed = std::move(unflushed_);
    unflushed_.clear();
    tasks_.add(stream_->write(in_flight_.data(), in_flight_.size())
                   .then([this, flushed = std::move(flushed)]() {
                     writing_ = false;
                     in_flight_.clear();
                     for (const auto& [channel, tag, n] : flushed)
                       caf::anon_send(actor_, flushed_atom::value, channel, tag, n);
                     if (after_flush_ && output_.empty()) {
                       finish(after_flush_reason_);
                       return;
                     }
                     flush_output();
                   }));
  }

  void finish_after_flush(const std::string& reason) {
    phase_ = phase::closing;
    after_flush_ = true;
    after_flush_reason_ = reason;
    if (!writing_ && output_.empty()) finish(reason);
    flush_output();
  }

  void finish(const std::string& reason) {
    if (phase_ == phase::done) return;
    log(log_level::debug, "amqp", "connection from " + peer_ + " ended: " + reason);
    phase_ = phase::done;
    if (actor_) caf::anon_send(actor_, close_atom::value, uint64_t{0});
    if (resume_reading_) resume_reading_->fulfill();
    finished_->fulfill();
  }

  void release_credit(size_t n) {
    unanswered_ -= std::min(unanswered_, n);
    if (unanswered_ < max_unanswered_messages / 2) maybe_resume_reading();
  }

  // A connection that publishes is not read while the node holds publishers back (consumers
  // are: acking is what frees memory); nor while too much of what it sent is unanswered.
  bool must_pause_reading() const {
    return unanswered_ >= max_unanswered_messages ||
           (has_published_ && config_.flow && config_.flow->blocked());
  }

  void maybe_resume_reading() {
    if (!resume_reading_ || must_pause_reading()) return;
    resume_reading_->fulfill();
    resume_reading_ = nullptr;
  }

  kj::Promise<void> heartbeat_loop() {
    auto half = std::max<int64_t>(heartbeat_ * 1000 / 2, 1);
    return config_.timer->afterDelay(half * kj::MILLISECONDS)
        .then([this, half]() -> kj::Promise<void> {
          if (phase_ == phase::done) return kj::READY_NOW;
          auto now = now_ms();
          if (now - last_read_ms_ > 2 * int64_t{heartbeat_} * 1000) {
            log(log_level::info, "amqp",
                "dropping " + peer_ + ": nothing received for " + std::to_string(2 * heartbeat_) +
                    " s (missed heartbeats)");
            finish("missed heartbeats");
            return kj::READY_NOW;
          }
          if (now - last_write_ms_ >= half && !writing_ && output_.empty()) {
            write_frame(output_, frame_type::heartbeat, 0, {});
            flush_output();
          }
          return heartbeat_loop();
        });
  }

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
  caf::actor actor_;
  std::map<uint16_t, channel> channels_;
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
  std::string output_;
  std::string in_flight_;                                               // the buffer being written
  std::vector<std::tuple<uint16_t, std::string, uint32_t>> unflushed_;  // deliveries in output_
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool after_flush_ = false;
  std::string after_flush_reason_;
  int64_t last_read_ms_ = now_ms();
  int64_t last_write_ms_ = now_ms();
  kj::Own<kj::PromiseFulfiller<void>> finished_;
  kj::ForkedPromise<void> finished_promise_ = nullptr;
  kj::TaskSet tasks_;

  friend class amqp_link;
};

void session::on_channel_method(uint16_t id, channel& ch, method_id m, reader& r) {
  // A method whose answer is just its -ok (unless no-wait).
  auto answer_with = [this, id](method_id ok, bool no_wait) -> std::function<void(caf::message&)> {
    if (no_wait) return nullptr;
    return [this, id, ok](caf::message&) { send_method(id, method_payload(ok)); };
  };
  if (m == basic_publish) {
    r.short_uint();  // reserved
    incoming_publish p;
    p.exchange = r.short_string();
    p.routing_key = r.short_string();
    auto flags = r.bits(2);
    p.mandatory = flags[0];
    if (flags[1])
      throw protocol_error(reply_code::not_implemented,
                           "basic.publish with immediate=true is not supported (as in RabbitMQ)");
    ch.publish = std::move(p);
    has_published_ = true;
    return;
  }
  if (m == basic_ack) {
    auto tag = r.longlong_uint();
    bool multiple = r.bits(1)[0];
    if (!multiple) {
      ch.acks.push_back(tag);
      return;
    }
    send_acks(id, ch);
    request(id, m, nullptr, [&](uint64_t q) {
      caf::anon_send(actor_, settle_atom::value, q, id, tag, true, settle_kind::ack);
    });
    return;
  }
  if (m == basic_nack || m == basic_reject) {
    auto tag = r.longlong_uint();
    bool multiple = false, requeue = true;
    if (m == basic_nack) {
      auto flags = r.bits(2);
      multiple = flags[0];
      requeue = flags[1];
    } else {
      requeue = r.bits(1)[0];
    }
    auto kind = requeue ? settle_kind::requeue : settle_kind::reject;
    request(id, m, nullptr, [&](uint64_t q) {
      caf::anon_send(actor_, settle_atom::value, q, id, tag, multiple, kind);
    });
    return;
  }
  if (m == channel_close) {
    auto code = r.short_uint();
    auto text = r.short_string();
    log(log_level::debug, "amqp",
        peer_ + " closed channel " + std::to_string(id) + " (" + std::to_string(code) + " " + text +
            ")");
    ch.closing = true;  // nothing more is taken on it
    request(
        id, m,
        [this, id](caf::message&) {
          channels_.erase(id);
          send_method(id, method_payload(channel_close_ok));
        },
        [&](uint64_t q) { caf::anon_send(actor_, close_atom::value, q, id); });
    return;
  }
  if (m == channel_close_ok) return;  // answer to a close we did not send: ignore
  if (m == channel_flow) {
    bool active = r.bits(1)[0];
    if (!active)
      return channel_error(id, reply_code::not_implemented,
                           "channel.flow active=false is not supported; use basic.qos", m);
    auto w = method_payload(channel_flow_ok);
    w.bits({true});
    return send_method(id, std::move(w));
  }
  if (m == exchange_declare) {
    r.short_uint();
    exchange_spec spec;
    spec.name = r.short_string();
    auto type = r.short_string();
    auto flags = r.bits(5);  // passive durable auto-delete internal no-wait
    spec.durable = flags[1];
    spec.auto_delete = flags[2];
    spec.internal = flags[3];
    spec.arguments = to_fields(r.field_table());
    bool passive = flags[0];
    if (!passive && !parse_exchange_type(type, spec.type))
      throw protocol_error(reply_code::command_invalid,
                           "unknown exchange type " + quote(type) +
                               " (direct, fanout, topic and headers are known)");
    return request(id, m, answer_with(exchange_declare_ok, flags[4]), [&](uint64_t q) {
      caf::anon_send(actor_, declare_atom::value, q, id, std::move(spec), passive);
    });
  }
  if (m == exchange_delete) {
    r.short_uint();
    auto name = r.short_string();
    auto flags = r.bits(2);  // if-unused no-wait
    return request(id, m, answer_with(exchange_delete_ok, flags[1]), [&](uint64_t q) {
      caf::anon_send(actor_, delete_atom::value, exchanges_atom::value, q, id, std::move(name),
                     bool{flags[0]});
    });
  }
  if (m == queue_declare) {
    r.short_uint();
    queue_spec spec;
    spec.name = r.short_string();
    auto flags = r.bits(5);  // passive durable exclusive auto-delete no-wait
    spec.durable = flags[1];
    spec.exclusive = flags[2];
    spec.auto_delete = flags[3];
    spec.arguments = to_fields(r.field_table());
    bool passive = flags[0];
    std::function<void(caf::message&)> done;
    if (!flags[4])
      done = [this, id](caf::message& msg) {
        const auto& info = msg.get_as<queue_info>(0);
        auto w = method_payload(queue_declare_ok);
        w.short_string(info.spec.name);
        w.long_uint(static_cast<uint32_t>(info.ready));
        w.long_uint(info.consumers);
        send_method(id, std::move(w));
      };
    return request(id, m, std::move(done), [&](uint64_t q) {
      caf::anon_send(actor_, declare_atom::value, q, id, std::move(spec), passive);
    });
  }
  if (m == queue_bind || m == queue_unbind) {
    r.short_uint();
    binding_spec b;
    b.queue = r.short_string();
    b.exchange = r.short_string();
    b.key = r.short_string();
    bool no_wait = m == queue_bind ? r.bits(1)[0] : false;
    b.arguments = to_fields(r.field_table());
    if (m == queue_bind)
      return request(id, m, answer_with(queue_bind_ok, no_wait), [&](uint64_t q) {
        caf::anon_send(actor_, bind_atom::value, q, id, std::move(b));
      });
    return request(id, m, answer_with(queue_unbind_ok, false), [&](uint64_t q) {
      caf::anon_send(actor_, unbind_atom::value, q, id, std::move(b));
    });
  }
  if (m == queue_purge || m == queue_delete) {
    r.short_uint();
    auto name = r.short_string();
    auto flags = r.bits(m == queue_purge ? 1 : 3);
    bool no_wait = flags.back();
    std::function<void(caf::message&)> done;
    auto ok = m == queue_purge ? queue_purge_ok : queue_delete_ok;
    if (!no_wait)
      done = [this, id, ok](caf::message& msg) {
        auto w = method_payload(ok);
        w.long_uint(msg.get_as<uint32_t>(0));
        send_method(id, std::move(w));
      };
    if (m == queue_purge)
      return request(id, m, std::move(done), [&](uint64_t q) {
        caf::anon_send(actor_, purge_atom::value, q, id, std::move(name));
      });
    return request(id, m, std::move(done), [&](uint64_t q) {
      caf::anon_send(actor_, delete_atom::value, queues_atom::value, q, id, std::move(name),
                     bool{flags[0]}, bool{flags[1]});
    });
  }
  if (m == basic_qos) {
    auto size = r.long_uint();
    auto count = r.short_uint();
    r.bits(1);  // global: Warren's prefetch is per consumer (per_consumer_qos)
    if (size != 0)
      return channel_error(id, reply_code::not_implemented,
                           "basic.qos prefetch_size is not supported; use prefetch_count", m);
    return request(id, m, answer_with(basic_qos_ok, false), [&](uint64_t q) {
      caf::anon_send(actor_, qos_atom::value, q, id, uint32_t{count});
    });
  }
  if (m == basic_consume) {
    r.short_uint();
    auto queue = r.short_string();
    auto tag = r.short_string();
    auto flags = r.bits(4);  // no-local no-ack exclusive no-wait
    r.field_table();         // arguments (x-priority and the like) are not used
    bool no_wait = flags[3];
    std::function<void(caf::message&)> done = [this, id, no_wait](caf::message& msg) {
      if (no_wait) return;
      auto w = method_payload(basic_consume_ok);
      w.short_string(msg.get_as<std::string>(0));
      send_method(id, std::move(w));
    };
    return request(id, m, std::move(done), [&](uint64_t q) {
      caf::anon_send(actor_, consume_atom::value, q, id, std::move(queue), std::move(tag),
                     bool{flags[1]}, bool{flags[2]}, uint32_t{0});
    });
  }
  if (m == basic_cancel) {
    auto tag = r.short_string();
    bool no_wait = r.bits(1)[0];
    std::function<void(caf::message&)> done;
    if (!no_wait)
      done = [this, id, tag](caf::message&) {
        auto w = method_payload(basic_cancel_ok);
        w.short_string(tag);
        send_method(id, std::move(w));
      };
    return request(id, m, std::move(done), [&](uint64_t q) {
      caf::anon_send(actor_, cancel_atom::value, q, id, tag, false);
    });
  }
  if (m == basic_get) {
    r.short_uint();
    auto queue = r.short_string();
    bool no_ack = r.bits(1)[0];
    return request(
        id, m,
        [this, id](caf::message& msg) {
          if (msg.empty()) {
            auto w = method_payload(basic_get_empty);
            w.short_string("");
            return send_method(id, std::move(w));
          }
          const auto& d = msg.get_as<delivery>(0);
          auto w = method_payload(basic_get_ok);
          w.longlong_uint(d.tag);
          w.bits({d.redelivered});
          w.short_string(d.msg->exchange);
          w.short_string(d.msg->routing_key);
          w.long_uint(d.message_count);
          send_content(id, w.bytes(), *d.msg);
        },
        [&](uint64_t q) {
          caf::anon_send(actor_, get_atom::value, q, id, std::move(queue), no_ack);
        });
  }
  if (m == basic_recover || m == basic_recover_async) {
    r.bits(1);  // requeue: unacked messages always go back to their queues
    std::function<void(caf::message&)> done;
    if (m == basic_recover) done = answer_with(basic_recover_ok, false);
    return request(id, m, std::move(done),
                   [&](uint64_t q) { caf::anon_send(actor_, recover_atom::value, q, id); });
  }
  if (m == confirm_select) {
    bool no_wait = r.bits(1)[0];
    if (!ch.confirm) {
      ch.confirm = true;
      ch.next_confirm_tag = 0;
    }
    return request(id, m, answer_with(confirm_select_ok, no_wait),
                   [&](uint64_t q) { caf::anon_send(actor_, confirm_atom::value, q, id); });
  }
  if (m.class_id == 90)
    return channel_error(
        id, reply_code::not_implemented,
        "transactions (" + method_name(m) + ") are not implemented; use publisher confirms", m);
  if (m.class_id == 40 && (m.method == 30 || m.method == 40))
    return channel_error(id, reply_code::not_implemented,
                         "exchange-to-exchange bindings are not implemented", m);
  throw protocol_error(reply_code::command_invalid,
                       "unexpected " + method_name(m) + " on channel " + std::to_string(id));
}

// --- answers and events from the connection actor -------------------------------------------

void session::complete(uint64_t request, caf::error error, caf::message result) {
  auto i = pending_.find(request);
  if (i == pending_.end()) return;
  auto p = std::move(i->second);
  pending_.erase(i);
  if (phase_ == phase::done) return;
  release_credit(p.credit);
  if (p.method == basic_publish) {
    auto c = channels_.find(p.channel);
    if (c != channels_.end() && c->second.publishes_in_flight > 0 &&
        --c->second.publishes_in_flight == 0 && !c->second.held.empty()) {
      // Answer this call first, then what waited for it.
      if (!error && p.done) p.done(result);
      release_held(p.channel);
      if (!error) return;
      p.done = nullptr;
    }
  }
  if (!error) {
    if (p.done) p.done(result);
    flush_output();
    return;
  }
  auto failure = describe(error);
  if (p.channel == 0) {
    // connection.open: an unknown vhost is NOT_ALLOWED in AMQP, as RabbitMQ answers.
    auto code = failure.code == reply_code::not_found ? reply_code::not_allowed : failure.code;
    return connection_error(code, failure.text, p.method);
  }
  if (is_channel_error(failure.code))
    return channel_error(p.channel, failure.code, failure.text, p.method);
  if (failure.code == reply_code::channel_error) {
    // The broker's channel is gone (closed after an earlier error): already being closed here.
    auto c = channels_.find(p.channel);
    if (c != channels_.end() && c->second.closing) return;
  }
  connection_error(failure.code, failure.text, p.method);
}

void session::deliver(uint16_t id, const std::string& tag, std::vector<delivery> batch) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.closing || phase_ != phase::running) return;
  for (const auto& d : batch) {
    auto w = method_payload(basic_deliver);
    w.short_string(tag);
    w.longlong_uint(d.tag);
    w.bits({d.redelivered});
    w.short_string(d.msg->exchange);
    w.short_string(d.msg->routing_key);
    send_content(id, w.bytes(), *d.msg);
  }
  unflushed_.emplace_back(id, tag, static_cast<uint32_t>(batch.size()));
}

void session::consumer_cancelled(uint16_t id, const std::string& tag) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.closing) return;
  auto w = method_payload(basic_cancel);
  w.short_string(tag);
  w.bits({true});  // no-wait: the client does not answer a server-sent cancel
  send_method(id, std::move(w));
}

void session::channel_closed(uint16_t id, const broker_failure& reason) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.closing) return;
  channel_error(id, reason.code, reason.text, c->second.last_method);
}

void session::connection_closed(const broker_failure& reason) {
  connection_error(reason.code, reason.text, {});
}

template <class F>
void amqp_link::on_loop(F f) {
  bridge_->post([s = session_, f = std::move(f)]() mutable {
    if (auto locked = s.lock()) f(*locked);
  });
}

void amqp_link::reply(uint64_t request, caf::error error, caf::message result) {
  on_loop([=](session& s) mutable { s.complete(request, std::move(error), std::move(result)); });
}
void amqp_link::deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) {
  on_loop([=](session& s) mutable {
    s.deliver(channel, tag, std::move(batch));
    s.flush_output();
  });
}
void amqp_link::consumer_cancelled(uint16_t channel, const std::string& tag, const std::string&) {
  on_loop([=](session& s) {
    s.consumer_cancelled(channel, tag);
    s.flush_output();
  });
}
void amqp_link::channel_closed(uint16_t channel, const broker_failure& reason) {
  on_loop([=](session& s) { s.channel_closed(channel, reason); });
}
void amqp_link::connection_closed(const broker_failure& reason) {
  on_loop([=](session& s) { s.connection_closed(reason); });
}

}  // namespace

void flow_control::set(bool blocked, std::string reason) {
  blocked_ = blocked;
  reason_ = std::move(reason);
  auto listeners = listeners_;
  listeners_.clear();
  for (auto& weak : listeners) {
    if (auto l = weak.lock()) {
      listeners_.push_back(weak);
      l->flow_changed();
    }
  }
}

kj::Promise<void> serve(kj::Own<kj::AsyncIoStream> stream, std::string peer, bool peer_is_loopback,
                        const session_config& config) {
  auto s = std::make_shared<session>(kj::mv(stream), std::move(peer), peer_is_loopback, config);
  return s->run().attach(kj::defer([s]() mutable { s.reset(); }));
}

}  // namespace warren::amqp
