// metadata_link: libraft's transport (raft_uv_transport) carried as frames over the cluster link,
// so that raft's messages never need a port of their own (issue 33).
//
// raft_uv wants a uv stream per connection. Each one is a socketpair: raft holds one end, and
// this object holds the other, reads what raft writes there and hands it to `send` as frames;
// frames from the peer are written into it for raft to read. Opening a connection is an `open`
// frame; either side ending it sends `close`, and raft on the other side then sees the stream end
// and connects again later. The node decides how frames travel (the authenticated CAF link).
//
// Frames come from peers. raft_uv does not check the lengths in what it decodes, so every message
// on a stream a peer opened is checked first (raft_wire_check) and a stream that fails ends; so
// does one given a data frame larger than max_frame_bytes, or data on a stream this member
// opened (raft only writes those). Data for a stream that does not exist is answered with close;
// a peer holds at most max_streams_per_peer streams it opened, the oldest ending first.
//
// Everything here runs on the metadata log's thread, on its uv loop.
#pragma once

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}
#include <uv.h>

#include "persistence/raft_frame.hpp"
#include "persistence/raft_wire_check.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace warren::persistence {

/// Sends a frame to the member at `to`; false when that member cannot be reached now.
using raft_frame_sender = std::function<bool(const std::string& to, raft_frame frame)>;

class metadata_link {
 public:
  static constexpr size_t max_frame_bytes = 1 << 20;
  /// A peer that does not read what raft writes to it is cut off beyond this much.
  static constexpr size_t max_unsent_bytes = 64 << 20;
  static constexpr size_t max_streams_per_peer = 8;

  /// `send` may be empty: then no member can be reached (a cluster of one).
  metadata_link(uv_loop_t* loop, raft_frame_sender send);

  metadata_link(const metadata_link&) = delete;
  metadata_link& operator=(const metadata_link&) = delete;

  /// The transport to give raft_uv_init; valid as long as this object.
  raft_uv_transport* transport() { return &transport_; }

  /// A frame from a peer.
  void receive(raft_frame frame);
  /// Ends every connection with the member at `address` (its link went down).
  void member_lost(const std::string& address);
  /// Streams ended because of what a peer sent on them.
  uint64_t refused_streams() const { return refused_streams_; }
  /// Members this one has received a frame from within the last `window_ms`.
  std::vector<std::string> heard_from(uint64_t window_ms) const;

 private:
  // The far end of one socketpair: raft holds the near end.
  struct bridge {
    metadata_link* link;
    uv_pipe_t pipe;
    std::string peer;
    uint64_t stream;
    bool mine;              // this member connected
    raft_wire_check check;  // what the peer writes, on a stream it opened
  };
  using bridge_key = std::tuple<std::string, uint64_t, bool>;
  struct pending_connect {
    raft_uv_connect* req;
    raft_uv_connect_cb cb;
    uv_stream_t* raft_end;
  };

  uv_loop_t* loop_;
  raft_frame_sender send_;
  raft_uv_transport transport_{};
  raft_id self_id_ = 0;
  std::string self_;
  raft_uv_accept_cb accept_ = nullptr;
  bool closing_ = false;
  raft_uv_transport_close_cb closed_ = nullptr;
  uint64_t next_stream_ = 0;
  size_t open_handles_ = 0;  // bridges and the timer, until their close callbacks ran
  uv_timer_t connected_{};   // fires the connect callbacks after connect() returned
  std::vector<pending_connect> connecting_;
  std::map<bridge_key, bridge*> bridges_;
  std::map<std::string, uint64_t> last_heard_;
  uint64_t refused_streams_ = 0;  // uv_now of the last frame from each member

  static int on_init(raft_uv_transport* t, raft_id id, const char* address);
  static int on_listen(raft_uv_transport* t, raft_uv_accept_cb cb);
  static int on_connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id, const char* address,
                        raft_uv_connect_cb cb);
  static void on_close(raft_uv_transport* t, raft_uv_transport_close_cb cb);

  uv_stream_t* open_bridge(const std::string& peer, uint64_t stream, bool mine);
  void accept(const raft_frame& frame);
  void take_data(bridge* b, const std::string& bytes);
  void make_room_for(const std::string& peer);
  void write(bridge* b, const std::string& bytes);
  void end(bridge* b, bool tell_peer);
  void finish_connects(int status);
  void handle_closed();
};

}  // namespace warren::persistence
