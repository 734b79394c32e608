// The node actor's part in the cluster: listings and forgetting go to the cluster actor; what
// the cluster actor learns about other members' queues goes to the vhosts, and a member going
// down to the vhosts and the connections (whose waiting confirms may depend on it).
#include "actors/broker_error.hpp"
#include "actors/connection_protocol.hpp"
#include "actors/node_parts.hpp"
#include "actors/vhost_protocol.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

namespace warren::node_parts {

caf::result<std::vector<node_info>> list_nodes(self_ptr self) {
  if (!self->state.cluster)
    return make_broker_error(reply_code::internal_error, "the node has no cluster actor");
  return self->delegate(cluster_handle(self->state.cluster), list_atom::value, nodes_atom::value);
}

caf::result<void> forget_node(self_ptr self, const std::string& name) {
  if (auto err = require_admin(self, "forgetting a node")) return err;
  if (!self->state.cluster)
    return make_broker_error(reply_code::internal_error, "the node has no cluster actor");
  return self->delegate(cluster_handle(self->state.cluster), forget_atom::value, name);
}

void set_cluster(self_ptr self, const caf::actor& cluster, const std::string& name) {
  auto& st = self->state;
  st.cluster = cluster;
  st.node_name = name;
  for (const auto& [vhost_name, vhost] : st.vhosts)
    self->send(vhost_handle(vhost), cluster_atom::value, cluster, name);
}

void placements_arrived(self_ptr self, std::vector<queue_placement>& placements) {
  auto& st = self->state;
  for (auto& p : placements) {
    auto v = st.vhosts.find(p.vhost);
    if (v != st.vhosts.end()) self->send(vhost_handle(v->second), placed_atom::value, std::move(p));
  }
}

void queue_removed(self_ptr self, const std::string& vhost, const std::string& queue,
                   const std::string& node) {
  auto& st = self->state;
  auto v = st.vhosts.find(vhost);
  if (v != st.vhosts.end()) self->send(vhost_handle(v->second), removed_atom::value, queue, node);
}

void node_gone(self_ptr self, const std::string& node, bool down) {
  auto& st = self->state;
  for (const auto& [name, vhost] : st.vhosts) {
    if (down)
      self->send(vhost_handle(vhost), down_atom::value, node);
    else
      self->send(vhost_handle(vhost), removed_atom::value, node);
  }
  if (!down) return;
  for (const auto& [addr, conn] : st.connections)
    self->send(caf::actor_cast<connection_actor_type>(conn), down_atom::value, node);
}

namespace {

template <class... Ts>
void apply_one(self_ptr self, const caf::actor& vhost, const std::string& what, Ts&&... xs) {
  self->request(vhost_handle(vhost), caf::infinite, std::forward<Ts>(xs)...)
      .then([] {},
            [=](caf::error& err) {
              log(log_level::warn, "cluster", what + ": " + to_string(describe(err)));
            });
}

}  // namespace

void apply_changes(self_ptr self, const std::string& from, const std::string& vhost,
                   std::vector<topology_change>& changes) {
  auto v = self->state.vhosts.find(vhost);
  if (v == self->state.vhosts.end()) return;
  auto what = [&](const std::string& change) {
    return change + " in vhost " + quote(vhost) + " (from " + from + ") not applied";
  };
  for (auto& c : changes) {
    switch (c.kind) {
      case topology_change::declare_exchange:
        apply_one(self, v->second, what("exchange " + quote(c.exchange.name)),
                  replicate_atom::value, std::move(c.exchange));
        break;
      case topology_change::delete_exchange:
        apply_one(self, v->second, what("deleting exchange " + quote(c.name)),
                  replicate_atom::value, delete_atom::value, std::move(c.name));
        break;
      case topology_change::bind:
      case topology_change::unbind: {
        auto text =
            "binding of " + quote(c.binding.destination) + " to " + quote(c.binding.exchange);
        if (c.kind == topology_change::bind)
          apply_one(self, v->second, what(text), replicate_atom::value, bind_atom::value,
                    std::move(c.binding));
        else
          apply_one(self, v->second, what("un" + text), replicate_atom::value, unbind_atom::value,
                    std::move(c.binding));
        break;
      }
      default:
        log(log_level::warn, "cluster", "unknown topology change from " + from);
    }
  }
}

void sync_member(self_ptr self, const caf::actor& peer) {
  for (const auto& [name, vhost] : self->state.vhosts)
    self->send(vhost_handle(vhost), sync_atom::value, peer);
}

}  // namespace warren::node_parts
