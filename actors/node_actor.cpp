#include "actors/node_actor.hpp"

#include "actors/actor_defaults.hpp"

#include "actors/broker_error.hpp"
#include "actors/gather.hpp"
#include "actors/log.hpp"
#include "actors/names.hpp"
#include "actors/vhost_actor.hpp"

namespace warren {

namespace {

using self_ptr = caf::stateful_actor<node_state>*;

void add_vhost(self_ptr self, const std::string& name) {
  if (self->state.vhosts.count(name) != 0) return;
  self->state.vhosts[name] = self->spawn(vhost_actor, name);
  log(log_level::info, "node", "vhost " + quote(name) + " added");
}

}  // namespace

caf::behavior node_actor(caf::stateful_actor<node_state>* self) {
  install_actor_defaults(self, "node");
  add_vhost(self, "/");
  self->state.users["guest"] = "guest";
  self->set_down_handler([=](caf::down_msg& dm) { self->state.connections.erase(dm.source); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& [name, vhost] : self->state.vhosts) self->send_exit(vhost, msg.reason);
    self->quit(msg.reason);
  });
  return {
      [=](connect_atom, client_hello& hello, caf::actor& conn) -> caf::result<caf::actor> {
        auto& st = self->state;
        auto user = hello.user.empty() ? std::string("guest") : hello.user;
        auto u = st.users.find(user);
        if (u == st.users.end() || (!hello.user.empty() && u->second != hello.password))
          return make_broker_error(reply_code::access_refused,
                                   "login refused for user " + quote(user));
        auto v = st.vhosts.find(hello.vhost);
        if (v == st.vhosts.end())
          return make_broker_error(reply_code::not_found, "no vhost " + quote(hello.vhost));
        self->monitor(conn);
        st.connections[conn.address()] = conn;
        log(log_level::debug, "node",
            "connection " + quote(hello.client_name) + " from " + hello.peer + " to vhost " +
                quote(hello.vhost));
        return v->second;
      },
      [=](declare_atom, vhost_atom, const std::string& name) -> caf::result<void> {
        if (auto problem = check_name("vhost name", name); !problem.empty())
          return make_broker_error(reply_code::precondition_failed, problem);
        add_vhost(self, name);
        return caf::unit;
      },
      [=](delete_atom, vhost_atom, const std::string& name) -> caf::result<void> {
        auto v = self->state.vhosts.find(name);
        if (v == self->state.vhosts.end())
          return make_broker_error(reply_code::not_found, "no vhost " + quote(name));
        self->send(v->second, shutdown_atom::value);
        self->state.vhosts.erase(v);
        log(log_level::info, "node", "vhost " + quote(name) + " deleted");
        return caf::unit;
      },
      [=](list_atom, queues_atom) {
        // Every queue of every vhost (for the node's periodic statistics).
        auto rp = self->make_response_promise<std::vector<queue_info>>();
        std::vector<caf::actor> vhosts;
        for (const auto& [name, vhost] : self->state.vhosts) vhosts.push_back(vhost);
        gather<std::vector<queue_info>>(
            vhosts,
            [=](const caf::actor& v) {
              return self->request(v, caf::infinite, list_atom::value, queues_atom::value);
            },
            [=](std::vector<std::vector<queue_info>> parts) mutable {
              std::vector<queue_info> rows;
              for (auto& p : parts) rows.insert(rows.end(), p.begin(), p.end());
              rp.deliver(std::move(rows));
            });
        return rp;
      },
      [=](list_atom, vhost_atom) {
        std::vector<std::string> names;
        for (const auto& [name, vhost] : self->state.vhosts) names.push_back(name);
        return names;
      },
      [=](list_atom, conns_atom) {
        auto rp = self->make_response_promise<std::vector<connection_info>>();
        std::vector<caf::actor> conns;
        for (const auto& [addr, conn] : self->state.connections) conns.push_back(conn);
        gather<connection_info>(
            conns,
            [=](const caf::actor& c) { return self->request(c, caf::infinite, stats_atom::value); },
            [=](std::vector<connection_info> rows) mutable { rp.deliver(std::move(rows)); });
        return rp;
      },
  };
}

}  // namespace warren
