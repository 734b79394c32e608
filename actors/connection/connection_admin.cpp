// The connection actor's administration requests: relayed to the node (node-wide settings,
// users, permissions, definitions, grants, statistics) or to the connection's vhost (its
// listings). The front door has checked the user's tags.
#include "actors/connection/connection_parts.hpp"

namespace warren::connection_parts {

namespace {

/// Relays a request to the node; its answer (typed Ts...) goes back to the front door.
template <class... Ts, class... Args>
void to_node(self_ptr self, uint64_t request, Args&&... args) {
  relay<Ts...>(self, request, 0, node_handle(self->state.node), std::forward<Args>(args)...);
}

/// Relays a listing to the connection's vhost.
template <class T, class What>
void to_vhost(self_ptr self, uint64_t request, What what) {
  relay<T>(self, request, 0, vhost_handle(self->state.vhost), list_atom::value, what);
}

}  // namespace

connection_access_api::behavior_type access_behavior(self_ptr self) {
  return {
      [=](declare_atom, vhost_atom, uint64_t request, std::string& name) {
        to_node(self, request, declare_atom::value, vhost_atom::value, std::move(name));
      },
      [=](delete_atom, vhost_atom, uint64_t request, std::string& name) {
        to_node(self, request, delete_atom::value, vhost_atom::value, std::move(name));
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name, vhost_limits& limits) {
        to_node(self, request, settings_atom::value, vhost_atom::value, std::move(name), limits);
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name) {
        to_node<vhost_limits>(self, request, settings_atom::value, vhost_atom::value,
                              std::move(name));
      },
      [=](declare_atom, user_atom, uint64_t request, std::string& name, std::string& password,
          std::vector<std::string>& tags) {
        to_node(self, request, declare_atom::value, user_atom::value, std::move(name),
                std::move(password), std::move(tags));
      },
      [=](settings_atom, user_atom, uint64_t request, std::string& name, std::string& password) {
        to_node(self, request, settings_atom::value, user_atom::value, std::move(name),
                std::move(password));
      },
      [=](delete_atom, user_atom, uint64_t request, std::string& name) {
        to_node(self, request, delete_atom::value, user_atom::value, std::move(name));
      },
      [=](declare_atom, permission_atom, uint64_t request, permission_record& p) {
        to_node(self, request, declare_atom::value, permission_atom::value, std::move(p));
      },
      [=](delete_atom, permission_atom, uint64_t request, std::string& user, std::string& vhost) {
        to_node(self, request, delete_atom::value, permission_atom::value, std::move(user),
                std::move(vhost));
      },
      [=](export_atom, uint64_t request) {
        to_node<definitions>(self, request, export_atom::value);
      },
      [=](import_atom, uint64_t request, definitions& defs) {
        to_node(self, request, import_atom::value, std::move(defs));
      },
      [=](grant_atom, uint64_t request, grant_record& what, int64_t ttl_s) {
        to_node<std::string>(self, request, grant_atom::value, std::move(what), ttl_s);
      },
      [=](revoke_atom, uint64_t request, std::string& prefix) {
        to_node(self, request, revoke_atom::value, std::move(prefix));
      },
      [=](forget_atom, uint64_t request, std::string& name) {
        to_node(self, request, forget_atom::value, std::move(name));
      },
      [=](sync_atom, metalog_atom, uint64_t request) {
        to_node(self, request, sync_atom::value, metalog_atom::value);
      },
  };
}

connection_listing_api::behavior_type listing_behavior(self_ptr self) {
  return {
      [=](list_atom, permission_atom, uint64_t request) {
        to_node<std::vector<permission_record>>(self, request, list_atom::value,
                                                permission_atom::value);
      },
      [=](list_atom, user_atom, uint64_t request) {
        to_node<std::vector<user_record>>(self, request, list_atom::value, user_atom::value);
      },
      [=](list_atom, vhost_atom, uint64_t request) {
        to_node<std::vector<std::string>>(self, request, list_atom::value, vhost_atom::value);
      },
      [=](list_atom, grant_atom, uint64_t request) {
        to_node<std::vector<grant_record>>(self, request, list_atom::value, grant_atom::value);
      },
      [=](stats_atom, uint64_t request) {
        to_node<node_stats_info>(self, request, stats_atom::value);
      },
      [=](list_atom, conns_atom, uint64_t request) {
        to_node<std::vector<connection_info>>(self, request, list_atom::value, conns_atom::value);
      },
      [=](list_atom, nodes_atom, uint64_t request) {
        to_node<std::vector<node_info>>(self, request, list_atom::value, nodes_atom::value);
      },
      [=](list_atom, exchanges_atom, uint64_t request) {
        to_vhost<std::vector<exchange_info>>(self, request, exchanges_atom::value);
      },
      [=](list_atom, queues_atom, uint64_t request) {
        to_vhost<std::vector<queue_info>>(self, request, queues_atom::value);
      },
      [=](list_atom, bindings_atom, uint64_t request) {
        to_vhost<std::vector<binding_info>>(self, request, bindings_atom::value);
      },
      [=](list_atom, consumers_atom, uint64_t request) {
        to_vhost<std::vector<consumer_info>>(self, request, consumers_atom::value);
      },
  };
}

}  // namespace warren::connection_parts
