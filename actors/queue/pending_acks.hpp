// pending_acks: the messages a queue has handed out and not had settled yet, by hand-out id.
// Pure bookkeeping (Conn is how the holder is named: the queue actor uses caf::actor, tests
// anything comparable); the queue actor requeues, forgets or dead-letters what it takes out.
//
// Every hand-out, acked or not, gets the next id, and a redelivery gets a new one, so a late
// settle for an earlier hand-out can never settle a later one.
#pragma once

#include "core/message.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warren {

template <class Conn>
class pending_acks {
 public:
  struct entry {
    message_ptr msg;
    uint64_t seq;        // the queue's sequence number (its place in arrival order)
    int64_t expires_at;  // steady ms; 0 = never
    Conn connection;     // who holds it
    uint64_t consumer;   // the consumer's key; 0 for a get (or a cancelled consumer's)
    uint16_t channel;
  };

  /// The id of the next hand-out.
  uint64_t next_id() { return ++last_id_; }

  void hold(uint64_t id, entry e) {
    body_bytes_ += e.msg->body.size();
    heap_bytes_ += e.msg->heap_bytes();
    held_.emplace(id, std::move(e));
  }

  /// Takes `id` out if `conn` holds it: another connection cannot settle it.
  std::optional<entry> take(uint64_t id, const Conn& conn) {
    auto i = held_.find(id);
    if (i == held_.end() || !(i->second.connection == conn)) return std::nullopt;
    auto e = std::move(i->second);
    held_.erase(i);
    body_bytes_ -= e.msg->body.size();
    heap_bytes_ -= e.msg->heap_bytes();
    return e;
  }

  /// Takes out every entry whose holder and channel match (a connection or channel closed).
  template <class Match>
  std::vector<entry> take_all_if(Match match) {
    std::vector<entry> out;
    for (auto i = held_.begin(); i != held_.end();) {
      if (match(i->second.connection, i->second.channel)) {
        body_bytes_ -= i->second.msg->body.size();
        heap_bytes_ -= i->second.msg->heap_bytes();
        out.push_back(std::move(i->second));
        i = held_.erase(i);
      } else {
        ++i;
      }
    }
    return out;
  }

  /// A consumer left. With `requeue` its entries are taken out and returned; otherwise they
  /// stay with its channel, to be settled like gets.
  std::vector<entry> consumer_left(uint64_t key, bool requeue) {
    if (requeue) return take_all_if_consumer(key);
    for (auto& [id, e] : held_)
      if (e.consumer == key) e.consumer = 0;
    return {};
  }

  /// The hand-out of message `id`, if one is held.
  std::optional<std::pair<uint64_t, const entry*>> find_message(const message_id& id) const {
    for (const auto& [hand_out, e] : held_)
      if (e.msg->id == id) return std::make_pair(hand_out, &e);
    return std::nullopt;
  }

  size_t size() const { return held_.size(); }
  /// The body bytes of the held messages.
  uint64_t body_bytes() const { return body_bytes_; }
  /// What the held messages keep on the heap beyond their bodies (message::heap_bytes).
  uint64_t heap_bytes() const { return heap_bytes_; }

 private:
  std::vector<entry> take_all_if_consumer(uint64_t key) {
    std::vector<entry> out;
    for (auto i = held_.begin(); i != held_.end();) {
      if (i->second.consumer == key) {
        body_bytes_ -= i->second.msg->body.size();
        heap_bytes_ -= i->second.msg->heap_bytes();
        out.push_back(std::move(i->second));
        i = held_.erase(i);
      } else {
        ++i;
      }
    }
    return out;
  }

  uint64_t last_id_ = 0;
  uint64_t body_bytes_ = 0;
  uint64_t heap_bytes_ = 0;
  std::unordered_map<uint64_t, entry> held_;
};

}  // namespace warren
