// session: reading and framing, the connection handshake, errors, writing, heartbeats and the
// end of a connection; answers from the connection actor; the link back to the loop.
#include "net/amqp/session.hpp"

#include "actors/connection/connection_actor.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "net/amqp/properties.hpp"
#include "net/amqp/sasl.hpp"

#include <caf/send.hpp>

#include <algorithm>

namespace warren::amqp {

kj::Promise<void> session::read_loop() {
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
        last_read_ms_ = steady_ms();
        input_.append(read_buffer_, n);
        process_input();
        return read_loop();
      });
}

void session::process_input() {
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
      current_method_ = {};  // a framing error belongs to no method
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
    connection_error(e.code, e.what(), current_method_);
  }
  input_.erase(0, at);
  if (phase_ == phase::closing && input_.size() > frame_max_ + frame_overhead)
    input_.clear();  // after a framing error nothing more is parsed
  flush_channels();
}

bool session::publish_held_back(const frame_view& f) {
  if (!config_.flow || !config_.flow->blocked() || phase_ != phase::running) return false;
  if (f.type != frame_type::method || f.channel == 0 || f.payload.size() < 4) return false;
  reader r(f.payload);
  method_id m{r.short_uint(), r.short_uint()};
  if (!(m == basic_publish)) return false;
  has_published_ = true;
  return true;
}

void session::on_frame(const frame_view& f) {
  current_method_ = {};
  if (draining_) return;  // after close-ok: read and dropped until the client closes
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

void session::on_connection_method(method_id m, reader& r) {
  if (m == connection_start_ok && phase_ == phase::start_ok) return on_start_ok(r);
  if (m == connection_secure_ok)
    throw protocol_error(reply_code::not_implemented, "no mechanism here uses connection.secure");
  if (m == connection_tune_ok && phase_ == phase::tune_ok) return on_tune_ok(r);
  if (m == connection_open && phase_ == phase::open) return on_open(r);
  if (m == connection_update_secret && phase_ == phase::running) return on_update_secret(r);
  if (m == connection_close) {
    auto code = r.short_uint();
    auto text = r.short_string();
    log(log_level::debug, "amqp",
        "client " + peer_ + " closed the connection (" + std::to_string(code) + " " + text + ")");
    send_method(0, method_payload(connection_close_ok));
    conn_.close();  // the broker side goes now: nothing more is sent to this client
    drain_after_flush_ = true;
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

void session::send_start() {
  table capabilities{{"publisher_confirms", value::of_bool(true)},
                     {"basic.nack", value::of_bool(true)},
                     {"consumer_cancel_notify", value::of_bool(true)},
                     {"per_consumer_qos", value::of_bool(true)},
                     {"authentication_failure_close", value::of_bool(true)},
                     {"exchange_exchange_bindings", value::of_bool(true)},
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
  w.long_string(sasl_mechanisms);
  w.long_string("en_US");
  send_method(0, std::move(w));
}

void session::on_start_ok(reader& r) {
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
  sasl_credentials credentials;
  if (auto problem = read_sasl_response(mechanism, response, credentials); !problem.empty())
    return connection_error(reply_code::access_refused, problem, connection_start_ok);
  user_ = std::move(credentials.user);
  password_ = std::move(credentials.password);
  // Refused here already, before tune: the node checks again (and the password) at open.
  if (user_.empty())
    return connection_error(reply_code::access_refused, "login refused: the user name is empty",
                            connection_start_ok);
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

void session::on_tune_ok(reader& r) {
  auto channel_max = r.short_uint();
  auto frame_max = r.long_uint();
  auto heartbeat = r.short_uint();
  channel_max_ =
      channel_max == 0 ? config_.channel_max : std::min<uint16_t>(channel_max, config_.channel_max);
  if (frame_max != 0 && frame_max < frame_min_size)
    return connection_error(reply_code::not_allowed,
                            "frame_max " + std::to_string(frame_max) + " is below the minimum of " +
                                std::to_string(frame_min_size),
                            connection_tune_ok);
  frame_max_ = frame_max == 0 ? config_.frame_max : std::min(frame_max, config_.frame_max);
  heartbeat_ = heartbeat;
  if (heartbeat_ > 0) tasks_.add(heartbeat_loop());
  phase_ = phase::open;
}

void session::on_open(reader& r) {
  vhost_ = r.short_string();
  client_hello hello{vhost_, user_, password_, client_name_, peer_, loopback_};
  auto link = std::make_shared<amqp_link>(config_.bridge, weak_from_this());
  auto actor = config_.system->spawn(connection_actor, config_.node, link, std::move(hello));
  conn_ = connection_ref(actor);
  std::weak_ptr<session> weak = weak_from_this();
  auto bridge = config_.bridge;
  actor->attach_functor([bridge, weak]() {
    bridge->post([weak]() {
      if (auto s = weak.lock())
        s->connection_closed({reply_code::connection_forced, "the broker closed the connection"});
    });
  });
  request(
      0, connection_open,
      [this](request_answer&) {
        auto w = method_payload(connection_open_ok);
        w.short_string("");
        send_method(0, std::move(w));
        phase_ = phase::running;
        if (config_.flow && config_.flow->blocked()) flow_changed();
      },
      [&](uint64_t r) { conn_.open(r); });
}

void session::on_update_secret(reader& r) {
  auto secret = r.long_string();
  r.short_string();  // the reason, for logs
  // One at a time: reading pauses until the node has checked it (each check reaches the node).
  secret_in_flight_ = true;
  request(
      0, connection_update_secret,
      [this](request_answer&) {
        secret_in_flight_ = false;
        send_method(0, method_payload(connection_update_secret_ok));
        maybe_resume_reading();
      },
      [&](uint64_t id) { conn_.update_secret(id, std::move(secret)); });
}

void session::connection_error(reply_code code, const std::string& text, method_id method) {
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
  maybe_resume_reading();  // a reader paused for credit or the alarm reads the close-ok
  flush_output();
  conn_.close();
  tasks_.add(config_.timer->afterDelay(close_grace_seconds * kj::SECONDS).then([this] {
    finish("no connection.close-ok in time");
  }));
}

std::string session::reply_text(reply_code code, const std::string& text) {
  std::string out = std::string(reply_code_name(code)) + " - " + text;
  if (out.size() > 255) out.resize(255);
  return out;
}

void session::send_method(uint16_t channel, writer w) {
  output_.method(channel, w.bytes());
  schedule_flush();
}

void session::send_content(uint16_t channel, const std::string& method, const message_ptr& m) {
  output_.content(channel, method, m, frame_max_);
  schedule_flush();
}

void session::send_raw(std::string bytes) {
  output_.raw(bytes);
  schedule_flush();
}

void session::schedule_flush() {
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  tasks_.add(kj::evalLater([this] {
    flush_scheduled_ = false;
    flush_output();
  }));
}

// One write at a time: what is appended meanwhile goes in the next one.
void session::flush_output() {
  // Draining: the write side is shut, and a write now would fail (TLS refuses it outright).
  if (writing_ || output_.empty() || phase_ == phase::done || draining_) return;
  writing_ = true;
  last_write_ms_ = steady_ms();
  auto flushed = std::move(unflushed_);
  unflushed_.clear();
  auto pieces = output_.start_write();
  auto promise = stream_->write(pieces.asPtr()).attach(kj::mv(pieces));
  tasks_.add(kj::mv(promise).then([this, flushed = std::move(flushed)]() {
    writing_ = false;
    output_.written();
    for (const auto& [channel, tag, n] : flushed) conn_.flushed(channel, tag, n);
    if (after_flush_ && output_.empty()) {
      end_after_flush();
      return;
    }
    flush_output();
  }));
}

void session::finish_after_flush(const std::string& reason) {
  phase_ = phase::closing;
  maybe_resume_reading();
  after_flush_ = true;
  after_flush_reason_ = reason;
  if (!writing_ && output_.empty()) return end_after_flush();
  flush_output();
}

// After close-ok to a client's close, the client may still be writing (publishes queued behind
// its close), and a socket closed with unread input answers those writes with a reset: the
// client sees EPIPE instead of a clean close. So, as RabbitMQ, this side is shut and what still
// comes is read and dropped until the client closes or the grace period ends.
void session::end_after_flush() {
  if (!drain_after_flush_) return finish(after_flush_reason_);
  if (draining_) return;
  draining_ = true;
  stream_->shutdownWrite();
  tasks_.add(config_.timer->afterDelay(close_grace_seconds * kj::SECONDS).then([this] {
    finish(after_flush_reason_);
  }));
}

void session::finish(const std::string& reason) {
  if (phase_ == phase::done) return;
  log(log_level::debug, "amqp", "connection from " + peer_ + " ended: " + reason);
  phase_ = phase::done;
  conn_.close();
  if (resume_reading_) resume_reading_->fulfill();
  finished_->fulfill();
}

void session::release_credit(size_t n) {
  unanswered_ -= std::min(unanswered_, n);
  if (unanswered_ < max_unanswered_messages / 2) maybe_resume_reading();
}

bool session::must_pause_reading() const {
  if (phase_ == phase::closing) return false;  // a close-ok or the client's EOF may be coming
  return unanswered_ >= max_unanswered_messages || secret_in_flight_ ||
         (has_published_ && config_.flow && config_.flow->blocked());
}

void session::maybe_resume_reading() {
  if (!resume_reading_ || must_pause_reading()) return;
  resume_reading_->fulfill();
  resume_reading_ = nullptr;
}

kj::Promise<void> session::handshake_deadline() {
  auto ms = config_.limits.handshake_timeout_ms;
  if (ms <= 0 || config_.timer == nullptr) return kj::READY_NOW;
  return config_.timer->afterDelay(ms * kj::MILLISECONDS).then([this, ms] {
    if (phase_ == phase::running || phase_ == phase::closing || phase_ == phase::done) return;
    log(log_level::info, "amqp",
        "dropping " + peer_ + ": no completed handshake within " + std::to_string(ms) + " ms");
    finish("handshake timeout");
  });
}

kj::Promise<void> session::heartbeat_loop() {
  auto half = std::max<int64_t>(heartbeat_ * 1000 / 2, 1);
  return config_.timer->afterDelay(half * kj::MILLISECONDS)
      .then([this, half]() -> kj::Promise<void> {
        if (phase_ == phase::done) return kj::READY_NOW;
        auto now = steady_ms();
        if (now - last_read_ms_ > 2 * int64_t{heartbeat_} * 1000) {
          log(log_level::info, "amqp",
              "dropping " + peer_ + ": nothing received for " + std::to_string(2 * heartbeat_) +
                  " s (missed heartbeats)");
          finish("missed heartbeats");
          return kj::READY_NOW;
        }
        if (now - last_write_ms_ >= half && !writing_ && output_.empty() && !draining_) {
          output_.heartbeat();
          flush_output();
        }
        return heartbeat_loop();
      });
}

// An answer of another type than its request's is a bug of ours (wrong_answer): INTERNAL_ERROR
// closes the connection, as AMQP closes it for an internal error, and the loop goes on.
void session::run_done(const pending_request& p, request_answer& answer) {
  if (!p.done) return;
  try {
    p.done(answer);
  } catch (const wrong_answer& e) {
    connection_error(e.failure.code, e.failure.text, p.method);
  }
}

void session::complete(uint64_t request, caf::error error, request_answer answer) {
  auto i = pending_.find(request);
  if (i == pending_.end()) return;
  auto p = std::move(i->second);
  pending_.erase(i);
  if (phase_ == phase::done) return;
  release_credit(p.credit);
  if (p.method == channel_close) {
    // The client's close is answered whatever the broker said: its side is gone either way.
    run_done(p, answer);
    flush_output();
    return;
  }
  if (p.method == basic_publish) {
    auto c = channels_.find(p.channel);
    if (c != channels_.end() && c->second.publishes_in_flight > 0 &&
        --c->second.publishes_in_flight == 0 && !c->second.held.empty()) {
      // Answer this call first, then what waited for it.
      if (!error) run_done(p, answer);
      release_held(p.channel);
      if (!error) return;
      p.done = nullptr;
    }
  }
  if (!error) {
    run_done(p, answer);
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
    if (c != channels_.end() && c->second.settling()) return;
  }
  connection_error(failure.code, failure.text, p.method);
}

void session::broker_closed_channel(uint16_t id, uint64_t serial, const broker_failure& reason) {
  auto c = channels_.find(id);
  if (c == channels_.end() || c->second.serial != serial || c->second.settling()) return;
  channel_error(id, reason.code, reason.text, {});
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

// The answer and the batch are moved into the posted work, never copied: a publish call's
// outcomes, a listing or a batch of deliveries is copied by value once already.
void amqp_link::reply(uint64_t request, caf::error error, request_answer answer) {
  on_loop([request, error = std::move(error), answer = std::move(answer)](session& s) mutable {
    s.complete(request, std::move(error), std::move(answer));
  });
}
void amqp_link::deliver(uint16_t channel, const std::string& tag, std::vector<delivery> batch) {
  on_loop([channel, tag, batch = std::move(batch)](session& s) mutable {
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
// The connection actor closed a channel: after a failed request (whose answer has already
// closed it here) or by itself (a consumer timeout). The serial keeps a late notice from closing
// a channel the client has meanwhile closed and opened again under the same number.
void amqp_link::channel_closed(uint16_t channel, uint64_t serial, const broker_failure& reason) {
  on_loop([=](session& s) { s.broker_closed_channel(channel, serial, reason); });
}
void amqp_link::connection_closed(const broker_failure& reason) {
  on_loop([=](session& s) { s.connection_closed(reason); });
}

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

void flow_control::listen(std::weak_ptr<flow_listener> listener) {
  listeners_.push_back(std::move(listener));
  if (listeners_.size() < prune_at_) return;
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(),
                                  [](const auto& w) { return w.expired(); }),
                   listeners_.end());
  prune_at_ = std::max<size_t>(64, 2 * listeners_.size());
}

kj::Promise<void> serve(kj::Own<kj::AsyncIoStream> stream, std::string peer, bool peer_is_loopback,
                        const session_config& config) {
  // Not make_shared: weak pointers to a session (its link, held by its connection actor) must
  // not keep the session's memory, 64 KiB of read buffer included, once it has ended.
  std::shared_ptr<session> s(
      new session(kj::mv(stream), std::move(peer), peer_is_loopback, config));
  return s->run().attach(kj::defer([s]() mutable { s.reset(); }));
}

}  // namespace warren::amqp
