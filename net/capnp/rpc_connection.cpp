// The Connection capability's calls; its contract is in rpc_connection.hpp.
#include "net/capnp/rpc_connection.hpp"

#include "core/wire_definitions.hpp"
#include "net/capnp/rpc_channel.hpp"
#include "net/capnp/rpc_grants.hpp"
#include "net/capnp/wire_convert.hpp"

#include <stdexcept>

namespace warren::net {

namespace {

class connection_impl final : public rpc::Connection::Server {
 public:
  explicit connection_impl(std::shared_ptr<rpc_session> session) : session_(std::move(session)) {}

 protected:
  kj::Promise<void> openChannel(OpenChannelContext ctx) override {
    auto id = session_->allocate_channel();
    if (id == 0)
      throw_failure({reply_code::resource_error, "this connection has used all 65535 channels"});
    return ask([&](uint64_t r) { conn().open_channel(r, id); })
        .then([this, ctx, id](request_answer) mutable {
          ctx.getResults().setChannel(channel_capability(session_, id));
        });
  }

  kj::Promise<void> close(CloseContext) override {
    return ask([&](uint64_t r) { conn().close(r); }).ignoreResult();
  }

  kj::Promise<void> addVhost(AddVhostContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().add_vhost(r, name); }).ignoreResult();
  }

  kj::Promise<void> deleteVhost(DeleteVhostContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().delete_vhost(r, name); }).ignoreResult();
  }

  kj::Promise<void> setVhostLimits(SetVhostLimitsContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName());
    vhost_limits limits{p.getMaxConnections(), p.getMaxQueues()};
    return ask([&](uint64_t r) { conn().set_vhost_limits(r, name, limits); }).ignoreResult();
  }

  kj::Promise<void> vhostLimits(VhostLimitsContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().get_vhost_limits(r, name); })
        .then([ctx](request_answer answer) mutable {
          const auto& limits = answer_as<vhost_limits>(answer);
          ctx.getResults().setMaxConnections(limits.max_connections);
          ctx.getResults().setMaxQueues(limits.max_queues);
        });
  }

  kj::Promise<void> addUser(AddUserContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName()), password = text(p.getPassword());
    std::vector<std::string> tags;
    for (auto t : p.getTags()) tags.push_back(text(t));
    return ask([&](uint64_t r) { conn().add_user(r, name, password, tags); }).ignoreResult();
  }

  kj::Promise<void> changePassword(ChangePasswordContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName()), password = text(p.getPassword());
    return ask([&](uint64_t r) { conn().change_password(r, name, password); }).ignoreResult();
  }

  kj::Promise<void> deleteUser(DeleteUserContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().delete_user(r, name); }).ignoreResult();
  }

  kj::Promise<void> listUsers(ListUsersContext ctx) override {
    return ask([&](uint64_t r) { conn().list_users(r); })
        .then([ctx](request_answer answer) mutable {
          const auto& users = answer_as<std::vector<user_record>>(answer);
          auto list = ctx.getResults().initUsers(static_cast<unsigned>(users.size()));
          for (unsigned i = 0; i < users.size(); ++i) {
            list[i].setName(users[i].name);
            auto tags = list[i].initTags(static_cast<unsigned>(users[i].tags.size()));
            for (unsigned k = 0; k < users[i].tags.size(); ++k) tags.set(k, users[i].tags[k]);
          }
        });
  }

  kj::Promise<void> setPermissions(SetPermissionsContext ctx) override {
    auto p = ctx.getParams();
    permission_record rec{text(p.getUser()), text(p.getVhost()), text(p.getConfigure()),
                          text(p.getWrite()), text(p.getRead())};
    return ask([&](uint64_t r) { conn().set_permissions(r, rec); }).ignoreResult();
  }

  kj::Promise<void> clearPermissions(ClearPermissionsContext ctx) override {
    auto p = ctx.getParams();
    auto user = text(p.getUser()), vhost = text(p.getVhost());
    return ask([&](uint64_t r) { conn().clear_permissions(r, user, vhost); }).ignoreResult();
  }

  kj::Promise<void> listPermissions(ListPermissionsContext ctx) override {
    return ask([&](uint64_t r) { conn().list_permissions(r); })
        .then([ctx](request_answer answer) mutable {
          const auto& rows = answer_as<std::vector<permission_record>>(answer);
          auto list = ctx.getResults().initPermissions(static_cast<unsigned>(rows.size()));
          for (unsigned i = 0; i < rows.size(); ++i) {
            list[i].setUser(rows[i].user);
            list[i].setVhost(rows[i].vhost);
            list[i].setConfigure(rows[i].configure);
            list[i].setWrite(rows[i].write);
            list[i].setRead(rows[i].read);
          }
        });
  }

  kj::Promise<void> exportDefinitions(ExportDefinitionsContext ctx) override {
    return ask([&](uint64_t r) { conn().export_definitions(r); })
        .then([ctx](request_answer answer) mutable {
          wire::write_definitions(answer_as<definitions>(answer),
                                  ctx.getResults().initDefinitions());
        });
  }

  kj::Promise<void> importDefinitions(ImportDefinitionsContext ctx) override {
    definitions defs;
    try {
      defs = wire::read_definitions(ctx.getParams().getDefinitions());
    } catch (const std::invalid_argument& e) {
      throw_failure({reply_code::command_invalid, e.what()});
    }
    return ask([&](uint64_t r) { conn().import_definitions(r, std::move(defs)); }).ignoreResult();
  }

  kj::Promise<void> listVhosts(ListVhostsContext ctx) override {
    return ask([&](uint64_t r) { conn().list_vhosts(r); })
        .then([ctx](request_answer answer) mutable {
          const auto& names = answer_as<std::vector<std::string>>(answer);
          auto list = ctx.getResults().initNames(static_cast<unsigned>(names.size()));
          for (unsigned i = 0; i < names.size(); ++i) list.set(i, names[i]);
        });
  }

  kj::Promise<void> listExchanges(ListExchangesContext ctx) override {
    return list<exchange_info>(
        &connection_ref::list_exchanges, write_exchange,
        [ctx](unsigned n) mutable { return ctx.getResults().initExchanges(n); });
  }

  kj::Promise<void> listQueues(ListQueuesContext ctx) override {
    return list<queue_info>(&connection_ref::list_queues, write_queue,
                            [ctx](unsigned n) mutable { return ctx.getResults().initQueues(n); });
  }

  kj::Promise<void> listBindings(ListBindingsContext ctx) override {
    return list<binding_info>(
        &connection_ref::list_bindings, write_binding,
        [ctx](unsigned n) mutable { return ctx.getResults().initBindings(n); });
  }

  kj::Promise<void> listConsumers(ListConsumersContext ctx) override {
    return list<consumer_info>(
        &connection_ref::list_consumers, write_consumer,
        [ctx](unsigned n) mutable { return ctx.getResults().initConsumers(n); });
  }

  kj::Promise<void> listConnections(ListConnectionsContext ctx) override {
    return list<connection_info>(
        &connection_ref::list_connections, write_connection,
        [ctx](unsigned n) mutable { return ctx.getResults().initConnections(n); });
  }

  kj::Promise<void> listNodes(ListNodesContext ctx) override {
    return list<node_info>(&connection_ref::list_nodes, write_node,
                           [ctx](unsigned n) mutable { return ctx.getResults().initNodes(n); });
  }

  kj::Promise<void> forgetNode(ForgetNodeContext ctx) override {
    std::string name = ctx.getParams().getName();
    return ask([&](uint64_t r) { conn().forget_node(r, std::move(name)); }).ignoreResult();
  }

  kj::Promise<void> syncMetadata(SyncMetadataContext) override {
    return ask([&](uint64_t r) { conn().sync_metadata(r); }).ignoreResult();
  }

  kj::Promise<void> grantPublisher(GrantPublisherContext ctx) override {
    auto p = ctx.getParams();
    grant_record what;
    what.kind = grant_kind::publisher;
    what.target = text(p.getExchange());
    what.key_pattern = text(p.getRoutingKeyPattern());
    return grant(std::move(what), p.getTtlSeconds()).then([ctx](opened_grant g) mutable {
      ctx.getResults().setPublisher(kj::mv(g.publisher));
    });
  }

  kj::Promise<void> grantConsumer(GrantConsumerContext ctx) override {
    auto p = ctx.getParams();
    grant_record what;
    what.kind = grant_kind::consumer;
    what.target = text(p.getQueue());
    return grant(std::move(what), p.getTtlSeconds()).then([ctx](opened_grant g) mutable {
      ctx.getResults().setConsumer(kj::mv(g.consumer));
    });
  }

  kj::Promise<void> listGrants(ListGrantsContext ctx) override {
    return list<grant_record>(&connection_ref::list_grants, write_grant,
                              [ctx](unsigned n) mutable { return ctx.getResults().initGrants(n); });
  }

  kj::Promise<void> revokeGrant(RevokeGrantContext ctx) override {
    auto token = text(ctx.getParams().getToken());
    return ask([&](uint64_t r) { conn().revoke_grant(r, std::move(token)); }).ignoreResult();
  }

  kj::Promise<void> nodeStats(NodeStatsContext ctx) override {
    return ask([&](uint64_t r) { conn().node_stats(r); })
        .then([ctx](request_answer answer) mutable {
          write_node_stats(answer_as<node_stats_info>(answer), ctx.getResults().initStats());
        });
  }

 private:
  connection_ref& conn() { return session_->conn(); }

  template <class Send>
  kj::Promise<request_answer> ask(Send&& send) {
    return session_->request(std::forward<Send>(send));
  }

  // Makes the grant (stored before its token comes back), then opens its capability as a
  // session of its own, logged in by the token.
  kj::Promise<opened_grant> grant(grant_record what, uint64_t ttl_s) {
    auto ttl = static_cast<int64_t>(std::min<uint64_t>(ttl_s, INT64_MAX));
    auto session = session_;
    return ask([&](uint64_t r) { conn().grant(r, std::move(what), ttl); })
        .then([session](request_answer answer) {
          auto token = answer_as<std::string>(answer);
          return open_grant(session->open_by_token(token), token);
        });
  }

  // Asks for a listing: `init(n)` makes the call's list of n, `write_row(row, out)` fills one.
  template <class Row, class WriteRow, class Init>
  kj::Promise<void> list(void (connection_ref::*send)(uint64_t), WriteRow write_row, Init init) {
    return ask([&](uint64_t r) { (conn().*send)(r); })
        .then([write_row, init](request_answer answer) mutable {
          const auto& rows = answer_as<std::vector<Row>>(answer);
          auto out = init(static_cast<unsigned>(rows.size()));
          for (unsigned i = 0; i < rows.size(); ++i) write_row(rows[i], out[i]);
        });
  }

  std::shared_ptr<rpc_session> session_;
};

}  // namespace

rpc::Connection::Client connection_capability(std::shared_ptr<rpc_session> session) {
  return kj::heap<connection_impl>(std::move(session));
}

}  // namespace warren::net
