#include "persistence/metadata_link.hpp"

#include "core/log.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace warren::persistence {

namespace {

metadata_link* link_of(raft_uv_transport* t) {
  return static_cast<metadata_link*>(t->impl);
}

// One write into a bridge: the bytes live until libuv is done with them.
struct bridge_write {
  uv_write_t req;
  std::string bytes;
};

}  // namespace

metadata_link::metadata_link(uv_loop_t* loop, raft_frame_sender send)
    : loop_(loop), send_(std::move(send)) {
  // raft_uv keeps its own pointer in transport_.data; this object lives in impl.
  transport_.impl = this;
  transport_.init = &metadata_link::on_init;
  transport_.listen = &metadata_link::on_listen;
  transport_.connect = &metadata_link::on_connect;
  transport_.close = &metadata_link::on_close;
}

// raft_uv calls on_close once on_init succeeded; the handles made here are closed there.
int metadata_link::on_init(raft_uv_transport* t, raft_id id, const char* address) {
  auto* self = link_of(t);
  self->self_id_ = id;
  self->self_ = address;
  self->connected_.data = self;
  if (int rc = uv_timer_init(self->loop_, &self->connected_); rc != 0) return RAFT_IOERR;
  ++self->open_handles_;
  return 0;
}

int metadata_link::on_listen(raft_uv_transport* t, raft_uv_accept_cb cb) {
  link_of(t)->accept_ = cb;
  return 0;
}

// A connection to `address`: a socketpair whose far end is bridged to that member. raft gets
// the near end once this call has returned (the interface asks for a callback, not a result).
int metadata_link::on_connect(raft_uv_transport* t, raft_uv_connect* req, raft_id,
                              const char* address, raft_uv_connect_cb cb) {
  auto* self = link_of(t);
  if (self->closing_ || !self->send_) return RAFT_NOCONNECTION;
  uint64_t stream = ++self->next_stream_;
  raft_frame open{raft_frame::kind::open, self->self_, self->self_id_, stream, true, {}};
  if (!self->send_(address, std::move(open))) return RAFT_NOCONNECTION;
  uv_stream_t* raft_end = self->open_bridge(address, stream, true);
  if (raft_end == nullptr) {
    raft_frame close{raft_frame::kind::close, self->self_, self->self_id_, stream, true, {}};
    self->send_(address, std::move(close));
    return RAFT_NOCONNECTION;
  }
  self->connecting_.push_back({req, cb, raft_end});
  uv_timer_start(
      &self->connected_,
      [](uv_timer_t* h) { static_cast<metadata_link*>(h->data)->finish_connects(0); }, 0, 0);
  return 0;
}

void metadata_link::on_close(raft_uv_transport* t, raft_uv_transport_close_cb cb) {
  auto* self = link_of(t);
  self->closing_ = true;
  self->closed_ = cb;
  self->accept_ = nullptr;
  self->finish_connects(RAFT_CANCELED);
  while (!self->bridges_.empty()) self->end(self->bridges_.begin()->second, true);
  uv_close(reinterpret_cast<uv_handle_t*>(&self->connected_),
           [](uv_handle_t* h) { static_cast<metadata_link*>(h->data)->handle_closed(); });
}

// Pending connects get their streams (status 0) or are cancelled with the stream they were
// given closed here, since raft never saw it.
void metadata_link::finish_connects(int status) {
  auto done = std::move(connecting_);
  connecting_.clear();
  for (auto& c : done) {
    if (status == 0) {
      c.cb(c.req, c.raft_end, 0);
      continue;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(c.raft_end), [](uv_handle_t* h) { raft_free(h); });
    c.cb(c.req, nullptr, status);
  }
}

// Makes a socketpair: returns the end raft reads and writes (allocated with raft_malloc, as
// raft frees it), and bridges the other end to `peer`.
uv_stream_t* metadata_link::open_bridge(const std::string& peer, uint64_t stream, bool mine) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return nullptr;
  auto* raft_end = static_cast<uv_pipe_t*>(raft_malloc(sizeof(uv_pipe_t)));
  auto* b = new bridge{this, {}, peer, stream, mine, {}};
  if (raft_end == nullptr) {
    ::close(fds[0]);
    ::close(fds[1]);
    delete b;
    return nullptr;
  }
  uv_pipe_init(loop_, raft_end, 0);
  uv_pipe_open(raft_end, fds[0]);
  uv_pipe_init(loop_, &b->pipe, 0);
  uv_pipe_open(&b->pipe, fds[1]);
  b->pipe.data = b;
  ++open_handles_;
  bridges_[{peer, stream, mine}] = b;
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&b->pipe),
      [](uv_handle_t*, size_t suggested, uv_buf_t* buf) {
        buf->base = static_cast<char*>(malloc(suggested));
        buf->len = buf->base != nullptr ? suggested : 0;
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
        auto* b = static_cast<bridge*>(s->data);
        auto* link = b->link;
        if (n > 0) {
          raft_frame f{raft_frame::kind::data,
                       link->self_,
                       link->self_id_,
                       b->stream,
                       b->mine,
                       std::string(buf->base, static_cast<size_t>(n))};
          if (!link->send_(b->peer, std::move(f))) link->end(b, false);
        } else if (n < 0) {
          link->end(b, true);  // raft closed its end, or the pair broke
        }
        free(buf->base);
      });
  return reinterpret_cast<uv_stream_t*>(raft_end);
}

void metadata_link::receive(raft_frame frame) {
  last_heard_[frame.from] = uv_now(loop_);
  bridge_key key{frame.from, frame.stream, !frame.by_connector};
  auto found = bridges_.find(key);
  switch (frame.what) {
    case raft_frame::kind::open:
      if (!frame.by_connector) return;
      if (found != bridges_.end()) end(found->second, false);  // a number reused: start over
      make_room_for(frame.from);
      return accept(frame);
    case raft_frame::kind::data:
      if (found == bridges_.end()) {  // ended here, or the peer outlived our process: it ends too
        if (send_)
          send_(frame.from,
                {raft_frame::kind::close, self_, self_id_, frame.stream, !frame.by_connector, {}});
        return;
      }
      return take_data(found->second, frame.bytes);
    case raft_frame::kind::close:
      if (found != bridges_.end()) end(found->second, false);
      return;
  }
}

// Data from the peer goes to raft only on a stream the peer opened, once checked.
void metadata_link::take_data(bridge* b, const std::string& bytes) {
  std::string problem;
  if (b->mine)
    problem = "data on a stream this member opened";
  else if (bytes.size() > max_frame_bytes)
    problem = "a frame of " + std::to_string(bytes.size()) + " bytes";
  else if (!b->check.feed(bytes.data(), bytes.size()))
    problem = b->check.problem();
  if (problem.empty()) return write(b, bytes);
  log(log_level::warn, "metadata", "ended a raft stream from " + b->peer + ": " + problem);
  ++refused_streams_;
  end(b, true);
}

// A peer opening stream after stream (a bug, or worse) costs this member a few of them: the
// oldest it opened ends first.
void metadata_link::make_room_for(const std::string& peer) {
  std::vector<bridge*> theirs;
  for (const auto& [key, b] : bridges_)
    if (b->peer == peer && !b->mine) theirs.push_back(b);
  if (theirs.size() < max_streams_per_peer) return;
  auto oldest = std::min_element(theirs.begin(), theirs.end(),
                                 [](bridge* a, bridge* b) { return a->stream < b->stream; });
  end(*oldest, true);
}

void metadata_link::accept(const raft_frame& frame) {
  auto refuse = [&] {
    if (!send_) return;
    send_(frame.from, {raft_frame::kind::close, self_, self_id_, frame.stream, false, {}});
  };
  if (closing_ || accept_ == nullptr || frame.from_id == 0) return refuse();
  uv_stream_t* raft_end = open_bridge(frame.from, frame.stream, false);
  if (raft_end == nullptr) return refuse();
  accept_(&transport_, frame.from_id, frame.from.c_str(), raft_end);
}

void metadata_link::write(bridge* b, const std::string& bytes) {
  auto* stream = reinterpret_cast<uv_stream_t*>(&b->pipe);
  if (uv_stream_get_write_queue_size(stream) > max_unsent_bytes) return end(b, true);
  if (bytes.empty()) return;
  auto* w = new bridge_write{{}, bytes};
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  int rc = uv_write(&w->req, stream, &buf, 1, [](uv_write_t* req, int) {
    delete static_cast<bridge_write*>(req->data);  // a failed write shows as a failed read too
  });
  if (rc != 0) {
    delete w;
    end(b, true);
  }
}

// Ends one bridge: raft sees its stream end, and the peer is told unless it told us.
void metadata_link::end(bridge* b, bool tell_peer) {
  bridges_.erase({b->peer, b->stream, b->mine});
  if (tell_peer && send_)
    send_(b->peer, {raft_frame::kind::close, self_, self_id_, b->stream, b->mine, {}});
  uv_close(reinterpret_cast<uv_handle_t*>(&b->pipe), [](uv_handle_t* h) {
    auto* b = static_cast<bridge*>(h->data);
    auto* link = b->link;
    delete b;
    link->handle_closed();
  });
}

void metadata_link::member_lost(const std::string& address) {
  last_heard_.erase(address);
  for (auto it = bridges_.begin(); it != bridges_.end();) {
    auto* b = it->second;
    ++it;
    if (b->peer == address) end(b, false);
  }
}

std::vector<std::string> metadata_link::heard_from(uint64_t window_ms) const {
  std::vector<std::string> out;
  uint64_t now = uv_now(loop_);
  for (const auto& [address, when] : last_heard_)
    if (now - when <= window_ms) out.push_back(address);
  return out;
}

void metadata_link::handle_closed() {
  if (--open_handles_ == 0 && closed_ != nullptr) closed_(&transport_);
}

}  // namespace warren::persistence
