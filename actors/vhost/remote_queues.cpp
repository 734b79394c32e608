#include "actors/vhost/remote_queues.hpp"

namespace warren {

std::optional<remote_queues::entry> remote_queues::place(const queue_placement& p) {
  auto [it, added] = queues_.try_emplace(p.spec.name);
  auto& e = it->second;
  if (added) e.id = remote_id_bit | ++next_id_;
  if (!added && e.node == p.node && e.queue == p.queue) return std::nullopt;
  e.spec = p.spec;
  e.node = p.node;
  e.queue = p.queue;
  e.home = p.home;
  return e;
}

std::optional<remote_queues::entry> remote_queues::remove(const std::string& name,
                                                          const std::string& node) {
  auto it = queues_.find(name);
  if (it == queues_.end() || it->second.node != node) return std::nullopt;
  auto e = std::move(it->second);
  queues_.erase(it);
  return e;
}

std::vector<remote_queues::entry> remote_queues::node_gone(const std::string& node, bool down) {
  std::vector<entry> out;
  for (auto it = queues_.begin(); it != queues_.end();) {
    if (it->second.node != node) {
      ++it;
      continue;
    }
    out.push_back(it->second);
    if (down) {
      it->second.queue = nullptr;
      it->second.home = nullptr;
      ++it;
    } else {
      it = queues_.erase(it);
    }
  }
  return out;
}

const remote_queues::entry* remote_queues::find(const std::string& name) const {
  auto it = queues_.find(name);
  return it == queues_.end() ? nullptr : &it->second;
}

}  // namespace warren
