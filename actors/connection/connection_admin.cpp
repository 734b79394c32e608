// The connection actor's administration requests: relayed to the node (node-wide settings,
// users, permissions, definitions, statistics) or to the connection's vhost (listings). The
// front door has checked the user's tags.
#include "actors/connection/connection_parts.hpp"

namespace warren::connection_parts {

connection_admin_api::behavior_type admin_behavior(self_ptr self) {
  return {
      [=](declare_atom, vhost_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, node_handle(self->state.node), declare_atom::value,
              vhost_atom::value, std::move(name));
      },
      [=](delete_atom, vhost_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, node_handle(self->state.node), delete_atom::value,
              vhost_atom::value, std::move(name));
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name, vhost_limits& limits) {
        relay(self, request, 0, node_handle(self->state.node), settings_atom::value,
              vhost_atom::value, std::move(name), limits);
      },
      [=](settings_atom, vhost_atom, uint64_t request, std::string& name) {
        relay<vhost_limits>(self, request, 0, node_handle(self->state.node), settings_atom::value,
                            vhost_atom::value, std::move(name));
      },
      [=](declare_atom, user_atom, uint64_t request, std::string& name, std::string& password,
          std::vector<std::string>& tags) {
        relay(self, request, 0, node_handle(self->state.node), declare_atom::value,
              user_atom::value, std::move(name), std::move(password), std::move(tags));
      },
      [=](settings_atom, user_atom, uint64_t request, std::string& name, std::string& password) {
        relay(self, request, 0, node_handle(self->state.node), settings_atom::value,
              user_atom::value, std::move(name), std::move(password));
      },
      [=](delete_atom, user_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, node_handle(self->state.node), delete_atom::value, user_atom::value,
              std::move(name));
      },
      [=](declare_atom, permission_atom, uint64_t request, permission_record& p) {
        relay(self, request, 0, node_handle(self->state.node), declare_atom::value,
              permission_atom::value, std::move(p));
      },
      [=](delete_atom, permission_atom, uint64_t request, std::string& user, std::string& vhost) {
        relay(self, request, 0, node_handle(self->state.node), delete_atom::value,
              permission_atom::value, std::move(user), std::move(vhost));
      },
      [=](list_atom, permission_atom, uint64_t request) {
        relay<std::vector<permission_record>>(self, request, 0, node_handle(self->state.node),
                                              list_atom::value, permission_atom::value);
      },
      [=](export_atom, uint64_t request) {
        relay<definitions>(self, request, 0, node_handle(self->state.node), export_atom::value);
      },
      [=](import_atom, uint64_t request, definitions& defs) {
        relay(self, request, 0, node_handle(self->state.node), import_atom::value, std::move(defs));
      },
      [=](list_atom, user_atom, uint64_t request) {
        relay<std::vector<user_record>>(self, request, 0, node_handle(self->state.node),
                                        list_atom::value, user_atom::value);
      },
      [=](list_atom, vhost_atom, uint64_t request) {
        relay<std::vector<std::string>>(self, request, 0, node_handle(self->state.node),
                                        list_atom::value, vhost_atom::value);
      },
      [=](stats_atom, uint64_t request) {
        relay<node_stats_info>(self, request, 0, node_handle(self->state.node), stats_atom::value);
      },
      [=](list_atom, conns_atom, uint64_t request) {
        relay<std::vector<connection_info>>(self, request, 0, node_handle(self->state.node),
                                            list_atom::value, conns_atom::value);
      },
      [=](list_atom, nodes_atom, uint64_t request) {
        relay<std::vector<node_info>>(self, request, 0, node_handle(self->state.node),
                                      list_atom::value, nodes_atom::value);
      },
      [=](grant_atom, uint64_t request, grant_record& what, int64_t ttl_s) {
        relay<std::string>(self, request, 0, node_handle(self->state.node), grant_atom::value,
                           std::move(what), ttl_s);
      },
      [=](list_atom, grant_atom, uint64_t request) {
        relay<std::vector<grant_record>>(self, request, 0, node_handle(self->state.node),
                                         list_atom::value, grant_atom::value);
      },
      [=](revoke_atom, uint64_t request, std::string& prefix) {
        relay(self, request, 0, node_handle(self->state.node), revoke_atom::value,
              std::move(prefix));
      },
      [=](forget_atom, uint64_t request, std::string& name) {
        relay(self, request, 0, node_handle(self->state.node), forget_atom::value, std::move(name));
      },
      [=](list_atom, exchanges_atom, uint64_t request) {
        relay<std::vector<exchange_info>>(self, request, 0, vhost_handle(self->state.vhost),
                                          list_atom::value, exchanges_atom::value);
      },
      [=](list_atom, queues_atom, uint64_t request) {
        relay<std::vector<queue_info>>(self, request, 0, vhost_handle(self->state.vhost),
                                       list_atom::value, queues_atom::value);
      },
      [=](list_atom, bindings_atom, uint64_t request) {
        relay<std::vector<binding_info>>(self, request, 0, vhost_handle(self->state.vhost),
                                         list_atom::value, bindings_atom::value);
      },
      [=](list_atom, consumers_atom, uint64_t request) {
        relay<std::vector<consumer_info>>(self, request, 0, vhost_handle(self->state.vhost),
                                          list_atom::value, consumers_atom::value);
      },
  };
}

}  // namespace warren::connection_parts
