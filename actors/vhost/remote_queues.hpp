// remote_queues: the queues of a vhost that live on other nodes of the cluster, as their home
// nodes announced them. Pure bookkeeping: the vhost actor binds and unbinds what this reports.
//
// Each queue gets a route id of its own (remote_id_bit set, so it never meets a local queue's or
// an exchange's id in a routing table), kept while the queue is known, so that the exchanges'
// routes to it can be dropped while its node is down and put back when it returns.
#pragma once

#include "actors/common/cluster_protocol.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace warren {

constexpr uint64_t remote_id_bit = uint64_t{1} << 62;

class remote_queues {
 public:
  struct entry {
    queue_spec spec;
    std::string node;
    caf::actor queue;  // null while its node is down
    caf::actor home;   // the vhost actor on its node
    uint64_t id = 0;
  };

  /// Records a placement. Returns the entry when routes to it should be (re)bound: it is new,
  /// or its queue actor changed (the node restarted); nullopt when nothing changed.
  std::optional<entry> place(const queue_placement& p);

  /// Forgets `name` if it lives on `node`; returns the forgotten entry.
  std::optional<entry> remove(const std::string& name, const std::string& node);

  /// Every queue of `node`: marked down (down = true, kept) or forgotten. Returns them as they
  /// were, for their routes to be dropped.
  std::vector<entry> node_gone(const std::string& node, bool down);

  const entry* find(const std::string& name) const;
  const std::map<std::string, entry>& all() const { return queues_; }

 private:
  std::map<std::string, entry> queues_;
  uint64_t next_id_ = 0;
};

}  // namespace warren
