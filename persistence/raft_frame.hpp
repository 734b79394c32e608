// raft_frame: one piece of a raft connection between two members of the metadata log, as the
// cluster link carries it (persistence/metadata_link.hpp makes and takes them). Plain data, with
// no raft or libuv header, so that the actors' message types can carry it.
#pragma once

#include <cstdint>
#include <string>

namespace warren::persistence {

/// One piece of a raft connection between two members.
struct raft_frame {
  enum class kind : uint8_t { open = 0, data = 1, close = 2 };
  kind what = kind::data;
  std::string from;           // the sender's raft address
  uint64_t from_id = 0;       // the sender's raft id
  uint64_t stream = 0;        // the number the connecting member gave the connection
  bool by_connector = false;  // sent by the member that opened the connection
  std::string bytes;          // what raft wrote (data frames only)
};

/// A member's raft id, from its node name: stable, never 0, the same on every member.
uint64_t raft_id_of(const std::string& node_name);

}  // namespace warren::persistence
