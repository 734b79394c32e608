#include "warren/connection.hpp"

#include "client/client_runtime.hpp"
#include "client/client_state.hpp"
#include "client/client_wire.hpp"
#include "core/hex.hpp"
#include "core/wire_definitions.hpp"
#include "core/wire_fields.hpp"
#include "warren/channel.hpp"

namespace warren::client {

namespace {

rpc::Connection::Client& cap_of(const std::shared_ptr<connection::state>& st) {
  if (!st->cap) throw error("CHANNEL_ERROR", "the connection is closed");
  return *st->cap;
}

}  // namespace

std::unique_ptr<connection> connection::open(const connect_options& options) {
  std::unique_ptr<connection> c(new connection());
  c->runtime_ = std::make_shared<client_runtime>(options);
  c->state_ = std::make_shared<state>();
  auto* rt = c->runtime_.get();
  auto st = c->state_;
  rt->call<void>([rt, st, options]() {
    auto req = rt->broker().connectRequest();
    req.setVhost(options.vhost);
    req.setUser(options.user);
    req.setPassword(options.password);
    req.setClientName(options.client_name);
    return req.send().then([st](capnp::Response<rpc::Broker::ConnectResults>&& r) {
      st->cap = kj::heap<rpc::Connection::Client>(r.getConnection());
    });
  });
  return c;
}

connection::~connection() {
  try {
    close();
  } catch (const error&) {
    // Closing a connection whose node is gone has nothing left to do.
  }
}

void connection::close() {
  if (closed_ || !runtime_) return;  // no runtime: open() failed to reach the node
  closed_ = true;
  auto st = state_;
  runtime_->call<void>([st]() -> kj::Promise<void> {
    if (!st->cap) return kj::READY_NOW;
    auto done = st->cap->closeRequest().send().ignoreResult();
    return done.then([st]() { st->cap = nullptr; }, [st](kj::Exception&&) { st->cap = nullptr; });
  });
}

std::unique_ptr<channel> connection::open_channel() {
  auto st = state_;
  auto ch = std::make_shared<channel::state>();
  // Promise pipelining: the channel is usable at once, so opening it and the first call on it
  // travel in one round trip. A failure to open shows up as that first call's error.
  runtime_->call<void>([st, ch]() {
    auto opening = cap_of(st).openChannelRequest().send();
    ch->cap = kj::heap<rpc::Channel::Client>(opening.getChannel());
    return kj::Promise<void>(kj::READY_NOW);
  });
  return std::unique_ptr<channel>(new channel(runtime_, ch));
}

void connection::add_vhost(const std::string& name) {
  auto st = state_;
  runtime_->call<void>([st, name]() {
    auto req = cap_of(st).addVhostRequest();
    req.setName(name);
    return req.send().ignoreResult();
  });
}

void connection::delete_vhost(const std::string& name) {
  auto st = state_;
  runtime_->call<void>([st, name]() {
    auto req = cap_of(st).deleteVhostRequest();
    req.setName(name);
    return req.send().ignoreResult();
  });
}

void connection::set_vhost_limits(const std::string& name, const vhost_limits& limits) {
  auto st = state_;
  runtime_->call<void>([st, name, limits]() {
    auto req = cap_of(st).setVhostLimitsRequest();
    req.setName(name);
    req.setMaxConnections(limits.max_connections);
    req.setMaxQueues(limits.max_queues);
    return req.send().ignoreResult();
  });
}

vhost_limits connection::get_vhost_limits(const std::string& name) {
  auto st = state_;
  return runtime_->call<vhost_limits>([st, name]() {
    auto req = cap_of(st).vhostLimitsRequest();
    req.setName(name);
    return req.send().then([](capnp::Response<rpc::Connection::VhostLimitsResults>&& r) {
      return vhost_limits{r.getMaxConnections(), r.getMaxQueues()};
    });
  });
}

void connection::add_user(const std::string& name, const std::string& password,
                          const std::vector<std::string>& tags) {
  auto st = state_;
  runtime_->call<void>([st, name, password, tags]() {
    auto req = cap_of(st).addUserRequest();
    req.setName(name);
    req.setPassword(password);
    auto list = req.initTags(static_cast<unsigned>(tags.size()));
    for (unsigned i = 0; i < tags.size(); ++i) list.set(i, tags[i]);
    return req.send().ignoreResult();
  });
}

void connection::change_password(const std::string& name, const std::string& password) {
  auto st = state_;
  runtime_->call<void>([st, name, password]() {
    auto req = cap_of(st).changePasswordRequest();
    req.setName(name);
    req.setPassword(password);
    return req.send().ignoreResult();
  });
}

void connection::delete_user(const std::string& name) {
  auto st = state_;
  runtime_->call<void>([st, name]() {
    auto req = cap_of(st).deleteUserRequest();
    req.setName(name);
    return req.send().ignoreResult();
  });
}

std::vector<user_record> connection::list_users() {
  auto st = state_;
  return runtime_->call<std::vector<user_record>>([st]() {
    return cap_of(st).listUsersRequest().send().then(
        [](capnp::Response<rpc::Connection::ListUsersResults>&& r) {
          std::vector<user_record> out;
          for (auto u : r.getUsers()) {
            user_record row{wire::text(u.getName()), {}, {}};
            for (auto t : u.getTags()) row.tags.push_back(wire::text(t));
            out.push_back(std::move(row));
          }
          return out;
        });
  });
}

void connection::set_permissions(const permission_record& p) {
  auto st = state_;
  runtime_->call<void>([st, p]() {
    auto req = cap_of(st).setPermissionsRequest();
    req.setUser(p.user);
    req.setVhost(p.vhost);
    req.setConfigure(p.configure);
    req.setWrite(p.write);
    req.setRead(p.read);
    return req.send().ignoreResult();
  });
}

void connection::clear_permissions(const std::string& user, const std::string& vhost) {
  auto st = state_;
  runtime_->call<void>([st, user, vhost]() {
    auto req = cap_of(st).clearPermissionsRequest();
    req.setUser(user);
    req.setVhost(vhost);
    return req.send().ignoreResult();
  });
}

std::vector<permission_record> connection::list_permissions() {
  auto st = state_;
  return runtime_->call<std::vector<permission_record>>([st]() {
    return cap_of(st).listPermissionsRequest().send().then(
        [](capnp::Response<rpc::Connection::ListPermissionsResults>&& r) {
          std::vector<permission_record> out;
          for (auto p : r.getPermissions())
            out.push_back({wire::text(p.getUser()), wire::text(p.getVhost()),
                           wire::text(p.getConfigure()), wire::text(p.getWrite()),
                           wire::text(p.getRead())});
          return out;
        });
  });
}

definitions connection::export_definitions() {
  auto st = state_;
  return runtime_->call<definitions>([st]() {
    return cap_of(st).exportDefinitionsRequest().send().then(
        [](capnp::Response<rpc::Connection::ExportDefinitionsResults>&& r) {
          return wire::read_definitions(r.getDefinitions());
        });
  });
}

void connection::import_definitions(const definitions& defs) {
  auto st = state_;
  runtime_->call<void>([st, defs]() {
    auto req = cap_of(st).importDefinitionsRequest();
    wire::write_definitions(defs, req.initDefinitions());
    return req.send().ignoreResult();
  });
}

std::vector<std::string> connection::list_vhosts() {
  auto st = state_;
  return runtime_->call<std::vector<std::string>>([st]() {
    return cap_of(st).listVhostsRequest().send().then(
        [](capnp::Response<rpc::Connection::ListVhostsResults>&& r) {
          std::vector<std::string> out;
          for (auto n : r.getNames()) out.emplace_back(n.cStr(), n.size());
          return out;
        });
  });
}

#define WARREN_LIST(method, Request, Results, getter, row_type, reader)          \
  std::vector<row_type> connection::method() {                                   \
    auto st = state_;                                                            \
    return runtime_->call<std::vector<row_type>>([st]() {                        \
      return cap_of(st).Request().send().then([](capnp::Response<Results>&& r) { \
        std::vector<row_type> out;                                               \
        for (auto row : r.getter()) out.push_back(reader(row));                  \
        return out;                                                              \
      });                                                                        \
    });                                                                          \
  }

WARREN_LIST(list_exchanges, listExchangesRequest, rpc::Connection::ListExchangesResults,
            getExchanges, exchange_row, read_exchange_row)
WARREN_LIST(list_queues, listQueuesRequest, rpc::Connection::ListQueuesResults, getQueues,
            queue_row, read_queue_row)
WARREN_LIST(list_bindings, listBindingsRequest, rpc::Connection::ListBindingsResults, getBindings,
            binding_row, read_binding_row)
WARREN_LIST(list_consumers, listConsumersRequest, rpc::Connection::ListConsumersResults,
            getConsumers, consumer_row, read_consumer_row)
WARREN_LIST(list_connections, listConnectionsRequest, rpc::Connection::ListConnectionsResults,
            getConnections, connection_row, read_connection_row)
WARREN_LIST(list_nodes, listNodesRequest, rpc::Connection::ListNodesResults, getNodes, node_row,
            read_node_row)
WARREN_LIST(list_grants, listGrantsRequest, rpc::Connection::ListGrantsResults, getGrants,
            grant_row, read_grant_row)

#undef WARREN_LIST

void connection::forget_node(const std::string& name) {
  auto st = state_;
  runtime_->call<void>([st, name]() {
    auto req = cap_of(st).forgetNodeRequest();
    req.setName(name);
    return req.send().ignoreResult();
  });
}

void connection::sync_metadata() {
  auto st = state_;
  runtime_->call<void>([st]() { return cap_of(st).syncMetadataRequest().send().ignoreResult(); });
}

namespace {

std::string hex_token(capnp::Data::Reader token) {
  return to_hex(std::string_view(reinterpret_cast<const char*>(token.begin()), token.size()));
}

}  // namespace

std::string connection::grant_publisher(const std::string& exchange, const std::string& key_pattern,
                                        uint64_t ttl_seconds) {
  auto st = state_;
  return runtime_->call<std::string>([st, exchange, key_pattern, ttl_seconds]() {
    auto req = cap_of(st).grantPublisherRequest();
    req.setExchange(exchange);
    req.setRoutingKeyPattern(key_pattern);
    req.setTtlSeconds(ttl_seconds);
    // Made and saved in one round trip; the capability is released at once (the token
    // restores it).
    auto made = req.send();
    return made.getPublisher().saveRequest().send().then(
        [](capnp::Response<rpc::Publisher::SaveResults>&& r) { return hex_token(r.getToken()); });
  });
}

std::string connection::grant_consumer(const std::string& queue, uint64_t ttl_seconds) {
  auto st = state_;
  return runtime_->call<std::string>([st, queue, ttl_seconds]() {
    auto req = cap_of(st).grantConsumerRequest();
    req.setQueue(queue);
    req.setTtlSeconds(ttl_seconds);
    auto made = req.send();
    return made.getConsumer().saveRequest().send().then(
        [](capnp::Response<rpc::QueueConsumer::SaveResults>&& r) {
          return hex_token(r.getToken());
        });
  });
}

void connection::revoke_grant(const std::string& token) {
  auto st = state_;
  runtime_->call<void>([st, token]() {
    auto req = cap_of(st).revokeGrantRequest();
    req.setToken(token);
    return req.send().ignoreResult();
  });
}

node_stats connection::stats() {
  auto st = state_;
  return runtime_->call<node_stats>([st]() {
    return cap_of(st).nodeStatsRequest().send().then(
        [](capnp::Response<rpc::Connection::NodeStatsResults>&& r) {
          return read_node_stats(r.getStats());
        });
  });
}

}  // namespace warren::client
