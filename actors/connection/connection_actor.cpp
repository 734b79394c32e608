// The connection actor's behaviour: four typed parts (the front doors' session requests, their
// administration requests and listings, and what the node and queues tell it), each checked at
// compile time against its interface in connection_protocol.hpp, and joined into one. The work is
// done in connection_channels.cpp, connection_publish.cpp, connection_consume.cpp and
// connection_admin.cpp.
#include "actors/connection/connection_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/behavior_parts.hpp"
#include "actors/connection/connection_parts.hpp"
#include "core/names.hpp"

#include <algorithm>

namespace warren {

namespace {

using namespace connection_parts;

void log_in(self_ptr self, uint64_t request) {
  self->request(node_handle(self->state.node), caf::infinite, connect_atom::value,
                self->state.hello, self_handle(self))
      .then(
          [=](caf::actor& vhost, const connection_settings& settings,
              const permission_record& permissions, const grant_record& grant) {
            auto& st = self->state;
            if (!st.hello.grant_token.empty()) {  // the grant's vhost and user, for listings
              st.hello.vhost = permissions.vhost;
              st.hello.user = permissions.user;
              st.hello.client_name += " (grant " + grant.token_prefix + ")";
            }
            st.rights = access_rights(permissions);
            st.vhost = vhost;
            st.consumer_timeout_ms = settings.consumer_timeout_ms;
            st.max_message_bytes = settings.max_message_bytes;
            st.channel_max = settings.channel_max;
            self->monitor(vhost);
            // A front door that logged in by a token learns what it may do.
            st.link->reply(request, {},
                           st.hello.grant_token.empty() ? make_answer() : make_answer(grant));
          },
          [=](caf::error& err) {
            self->state.link->reply(request, err, {});
            close_connection(self);
          });
}

// A refreshed secret (an OAuth client's new token). Warren's users log in with passwords, which
// do not expire, so the secret itself is not checked, as RabbitMQ's internal users do not check
// it; the login is, as far as it still can be: the user must still exist and still have access
// to the connection's vhost, or the connection is closed.
void update_secret(self_ptr self, uint64_t request, std::string&) {
  auto hello = self->state.hello;
  hello.refresh = true;
  self->request(node_handle(self->state.node), caf::infinite, auth_atom::value, hello)
      .then(
          [=](std::vector<std::string>&, std::vector<std::string>& vhosts) {
            if (std::find(vhosts.begin(), vhosts.end(), hello.vhost) == vhosts.end()) {
              self->state.link->reply(
                  request,
                  make_broker_error(reply_code::not_allowed,
                                    "access to vhost " + quote(hello.vhost) + " refused for user " +
                                        quote(hello.user)),
                  {});
              close_connection(self);
              return;
            }
            self->state.link->reply(request, {}, {});
          },
          [=](caf::error& err) {
            self->state.link->reply(request, err, {});
            close_connection(self);
          });
}

void close_connection_by_client(self_ptr self, uint64_t request) {
  // Publishes still waiting for an exchange lookup or a declare were accepted before the close:
  // they are routed first.
  auto& st = self->state;
  if (std::any_of(st.channels.begin(), st.channels.end(),
                  [](const auto& c) { return c.second.open && c.second.publishes_waiting(); })) {
    st.close_after_publishes = request == 0 ? std::optional<uint64_t>(0) : request;
    return;
  }
  close_connection(self);
  if (request != 0) st.link->reply(request, {}, {});
}

connection_info stats(self_ptr self) {
  auto& st = self->state;
  uint32_t open = 0;
  for (const auto& [id, ch] : st.channels) open += ch.open ? 1 : 0;
  return {st.hello.client_name, st.hello.peer, st.hello.vhost, st.hello.user, open, st.traffic};
}

// A deleted vhost closes the connection; a deleted exchange leaves the cache.
void on_down(self_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (st.vhost && dm.source == st.vhost.address()) {
    st.link->connection_closed(
        {reply_code::connection_forced, "vhost " + quote(st.hello.vhost) + " was deleted"});
    close_connection(self);
    return;
  }
  for (auto i = st.exchanges.begin(); i != st.exchanges.end();)
    i = i->second.actor.address() == dm.source ? st.exchanges.erase(i) : std::next(i);
  queue_node_down(self, dm.source);
}

connection_session_api::behavior_type session_behavior(self_ptr self) {
  return {
      [=](open_atom, uint64_t r) { log_in(self, r); },
      [=](auth_atom, uint64_t r, std::string& secret) { update_secret(self, r, secret); },
      [=](close_atom, uint64_t r) { close_connection_by_client(self, r); },
      [=](open_atom, uint64_t r, uint16_t id) { open_new_channel(self, r, id); },
      [=](close_atom, uint64_t r, uint16_t id) { close_by_client(self, r, id); },
      [=](qos_atom, uint64_t r, uint16_t id, uint32_t n) { set_qos(self, r, id, n, false); },
      [=](qos_atom, uint64_t r, uint16_t id, uint32_t n, bool global) {
        set_qos(self, r, id, n, global);
      },
      [=](confirm_atom, uint64_t r, uint16_t id) { confirm_select(self, r, id); },
      [=](declare_atom, uint64_t r, uint16_t id, exchange_spec& spec, bool passive) {
        declare_exchange(self, r, id, spec, passive);
      },
      [=](delete_atom, exchanges_atom, uint64_t r, uint16_t id, std::string& name, bool if_unused) {
        delete_exchange(self, r, id, name, if_unused);
      },
      [=](declare_atom, uint64_t r, uint16_t id, queue_spec& spec, bool passive) {
        declare_queue(self, r, id, spec, passive);
      },
      [=](delete_atom, queues_atom, uint64_t r, uint16_t id, std::string& name, bool if_unused,
          bool if_empty,
          bool force) { delete_queue(self, r, id, name, if_unused, if_empty, force); },
      [=](stream_atom, uint64_t r, uint16_t id, stream_command& cmd) {
        stream_request(self, r, id, cmd);
      },
      [=](purge_atom, uint64_t r, uint16_t id, std::string& name) { purge(self, r, id, name); },
      [=](bind_atom, uint64_t r, uint16_t id, binding_spec& b) { bind(self, r, id, b, true); },
      [=](unbind_atom, uint64_t r, uint16_t id, binding_spec& b) { bind(self, r, id, b, false); },
      [=](publish_atom, uint64_t r, uint16_t id, std::vector<message_ptr>& msgs) {
        publish(self, r, id, msgs);
      },
      [=](consume_atom, uint64_t r, uint16_t id, consume_request& c) { consume(self, r, id, c); },
      [=](cancel_atom, uint64_t r, uint16_t id, const std::string& tag, bool requeue_unacked) {
        cancel(self, r, id, tag, requeue_unacked);
      },
      [=](flushed_atom, uint16_t id, const std::string& tag, uint32_t n) {
        flushed(self, id, tag, n);
      },
      [=](get_atom, uint64_t r, uint16_t id, const std::string& queue, bool no_ack) {
        get(self, r, id, queue, no_ack);
      },
      [=](peek_atom, uint64_t r, uint16_t id, const std::string& queue, uint64_t from,
          uint32_t count) { peek(self, r, id, queue, from, count); },
      [=](settle_atom, uint64_t r, uint16_t id, uint64_t tag, bool multiple, settle_kind kind) {
        settle_request(self, r, id, tag, multiple, kind);
      },
      [=](settle_atom, uint64_t r, uint16_t id, const std::vector<uint64_t>& tags) {
        ack_each_request(self, r, id, tags);
      },
      [=](recover_atom, uint64_t r, uint16_t id) { recover(self, r, id); },
      [=](lookup_atom, uint64_t r, uint16_t id, const message_id& msg_id) {
        if (open_channel(self, r, id))
          relay<lookup_reply>(self, r, id, vhost_handle(self->state.vhost), lookup_atom::value,
                              msg_id);
      },
  };
}

connection_broker_api::behavior_type broker_behavior(self_ptr self) {
  return {
      [=](timeout_atom) { check_timeouts(self); },
      [=](stats_atom) { return stats(self); },
      [=](blocked_atom, bool blocked, const std::string&) { set_blocked(self, blocked); },
      [=](confirm_atom, uint16_t id, const std::vector<uint64_t>& acked,
          const std::vector<uint64_t>& nacked) { confirm(self, id, acked, nacked); },
      [=](down_atom, const std::string&) { member_down(self); },
      [=](close_atom, const std::string& reason) {
        self->state.link->connection_closed({reply_code::connection_forced, reason});
        close_connection(self);
      },
      [=](cancelled_atom, uint16_t id, const std::string& tag, const std::string& reason) {
        cancelled_by_queue(self, id, tag, reason);
      },
      [=](deliver_atom, uint16_t id, const std::string& tag, bool no_ack,
          std::vector<queued_delivery>& batch) { deliver(self, id, tag, no_ack, batch); },
  };
}

}  // namespace

connection_actor_type::behavior_type connection_actor(
    connection_actor_type::stateful_pointer<connection_state> self, caf::actor node,
    std::shared_ptr<client_link> link, client_hello hello) {
  install_actor_defaults(self, "connection");
  self->state.node = std::move(node);
  self->state.link = std::move(link);
  self->state.hello = std::move(hello);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  return join_parts<connection_actor_type, connection_session_api, connection_access_api,
                    connection_listing_api, connection_broker_api>(
      session_behavior(self), access_behavior(self), listing_behavior(self), broker_behavior(self));
}

}  // namespace warren
