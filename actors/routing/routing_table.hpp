// The bindings of one exchange and the routing function over them: which queues a message goes
// to. Pure data, no actors: the exchange actor owns one, and tests drive it directly.
//
// direct: binding key == routing key. fanout: every bound queue. topic: trie (topic_trie.hpp).
// headers: x-match over binding arguments (headers_match.hpp). A queue bound several ways still
// receives a message once.
#pragma once

#include "actors/common/protocol.hpp"
#include "actors/routing/topic_trie.hpp"
#include "core/message.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace warren {

class routing_table {
 public:
  using queue_id = uint64_t;

  explicit routing_table(exchange_type type);

  /// Adds a binding; false when the same (queue, key, arguments) is already bound.
  bool add(queue_id queue, const std::string& key, const field_table& arguments);

  /// Removes a binding; false when it was not bound.
  bool remove(queue_id queue, const std::string& key, const field_table& arguments);

  /// Removes every binding of `queue`.
  void remove_queue(queue_id queue);

  /// Appends the queues `msg` goes to, each once, in ascending id order.
  void route(const message& msg, std::vector<queue_id>& out) const;

  size_t binding_count() const { return count_; }

  /// True while `queue` has at least one binding here.
  bool binds(queue_id queue) const { return by_queue_.count(queue) != 0; }

 private:
  struct bound {
    std::string key;
    field_table arguments;
  };

  exchange_type type_;
  size_t count_ = 0;
  std::unordered_map<queue_id, std::vector<bound>> by_queue_;
  std::unordered_map<std::string, std::vector<queue_id>> direct_;
  topic_trie topic_;
  std::vector<std::pair<field_table, queue_id>> headers_;
};

}  // namespace warren
