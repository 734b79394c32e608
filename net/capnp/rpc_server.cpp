#include "net/capnp/rpc_server.hpp"

#include "core/log.hpp"
#include "core/names.hpp"
#include "core/wire_definitions.hpp"
#include "net/capnp/rpc_channel_ops.hpp"
#include "net/capnp/rpc_grants.hpp"
#include "net/capnp/rpc_session.hpp"
#include "net/capnp/size_guarded_stream.hpp"
#include "net/capnp/wire_convert.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <caf/send.hpp>

#include <stdexcept>

namespace warren::net {

namespace {

/// Largest message the server reads from a client: bounds memory per call.
constexpr uint64_t max_message_words = 16 * 1024 * 1024;  // 128 MiB
// Before connect succeeds a client sends one small call; nothing bigger is read.
constexpr uint64_t max_message_before_login = 64 * 1024;

class channel_impl final : public rpc::Channel::Server {
 public:
  channel_impl(std::shared_ptr<rpc_session> session, uint16_t id)
      : ops_(std::move(session), id), id_(id) {}

  ~channel_impl() noexcept(false) {
    if (!closed_) conn().close_channel(0, id_);
  }

 protected:
  kj::Promise<void> exchangeDeclare(ExchangeDeclareContext ctx) override {
    auto p = ctx.getParams();
    exchange_spec spec;
    spec.name = text(p.getName());
    bool passive = p.getPassive();
    auto type = text(p.getType());
    if (!passive && !parse_exchange_type(type, spec.type))
      throw_failure({reply_code::command_invalid, "unknown exchange type " + quote(type) +
                                                      "; use direct, fanout, topic or headers"});
    spec.durable = p.getDurable();
    spec.auto_delete = p.getAutoDelete();
    spec.internal = p.getInternal();
    spec.arguments = read_table(p.getArguments());
    return ask([&](uint64_t r) { conn().declare_exchange(r, id_, std::move(spec), passive); })
        .ignoreResult();
  }

  kj::Promise<void> exchangeDelete(ExchangeDeleteContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName());
    bool if_unused = p.getIfUnused();
    return ask([&](uint64_t r) { conn().delete_exchange(r, id_, name, if_unused); }).ignoreResult();
  }

  kj::Promise<void> queueDeclare(QueueDeclareContext ctx) override {
    auto p = ctx.getParams();
    queue_spec spec;
    spec.name = text(p.getName());
    spec.durable = p.getDurable();
    spec.exclusive = p.getExclusive();
    spec.auto_delete = p.getAutoDelete();
    spec.arguments = read_table(p.getArguments());
    spec.home = text(p.getNode());
    bool passive = p.getPassive();
    return ask([&](uint64_t r) { conn().declare_queue(r, id_, std::move(spec), passive); })
        .then([ctx](caf::message m) mutable {
          const auto& info = m.get_as<queue_info>(0);
          auto res = ctx.getResults();
          res.setName(info.spec.name);
          res.setMessageCount(static_cast<uint32_t>(info.ready));
          res.setConsumerCount(info.consumers);
        });
  }

  kj::Promise<void> queueDelete(QueueDeleteContext ctx) override {
    auto p = ctx.getParams();
    auto name = text(p.getName());
    bool if_unused = p.getIfUnused(), if_empty = p.getIfEmpty(), force = p.getForce();
    return ask([&](uint64_t r) { conn().delete_queue(r, id_, name, if_unused, if_empty, force); })
        .then([ctx](caf::message m) mutable {
          ctx.getResults().setMessageCount(m.get_as<uint32_t>(0));
        });
  }

  kj::Promise<void> queuePurge(QueuePurgeContext ctx) override {
    auto name = text(ctx.getParams().getName());
    return ask([&](uint64_t r) { conn().purge(r, id_, name); }).then([ctx](caf::message m) mutable {
      ctx.getResults().setMessageCount(m.get_as<uint32_t>(0));
    });
  }

  kj::Promise<void> queueBind(QueueBindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getExchange()), text(p.getQueue()), text(p.getBindingKey()),
                   read_table(p.getArguments())};
    return ask([&](uint64_t r) { conn().bind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> queueUnbind(QueueUnbindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getExchange()), text(p.getQueue()), text(p.getBindingKey()),
                   read_table(p.getArguments())};
    return ask([&](uint64_t r) { conn().unbind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> exchangeBind(ExchangeBindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getSource()), text(p.getDestination()), text(p.getBindingKey()),
                   read_table(p.getArguments()), true};
    return ask([&](uint64_t r) { conn().bind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> exchangeUnbind(ExchangeUnbindContext ctx) override {
    auto p = ctx.getParams();
    binding_spec b{text(p.getSource()), text(p.getDestination()), text(p.getBindingKey()),
                   read_table(p.getArguments()), true};
    return ask([&](uint64_t r) { conn().unbind(r, id_, std::move(b)); }).ignoreResult();
  }

  kj::Promise<void> publish(PublishContext ctx) override {
    std::vector<message_ptr> msgs{read_outbound(ctx.getParams().getMessage())};
    return ops_.publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      write_publish_result(ids.at(0), outcomes.at(0), ctx.getResults().initResult());
    });
  }

  kj::Promise<void> publishBatch(PublishBatchContext ctx) override {
    auto in = ctx.getParams().getMessages();
    std::vector<message_ptr> msgs;
    msgs.reserve(in.size());
    for (auto m : in) msgs.push_back(read_outbound(m));
    return ops_.publish(std::move(msgs), [ctx](const auto& ids, const auto& outcomes) mutable {
      auto list = ctx.getResults().initResults(static_cast<unsigned>(ids.size()));
      for (unsigned i = 0; i < ids.size(); ++i)
        write_publish_result(ids[i], outcomes.at(i), list[i]);
    });
  }

  kj::Promise<void> consume(ConsumeContext ctx) override {
    auto p = ctx.getParams();
    consume_request c;
    c.queue = text(p.getQueue());
    c.tag = text(p.getConsumerTag());
    c.no_ack = p.getNoAck();
    c.exclusive = p.getExclusive();
    c.prefetch = p.getPrefetch();
    c.priority = p.getPriority();
    auto window = channel_ops::read_window(p.getWindow(), c);
    return ops_.consume(
        std::move(c), p.getConsumer(), window,
        [ctx](const std::string& tag) mutable { ctx.getResults().setConsumerTag(tag); });
  }

  kj::Promise<void> consumeStream(ConsumeStreamContext ctx) override {
    auto p = ctx.getParams();
    auto c = channel_ops::stream_request(text(p.getQueue()), p);
    auto window = channel_ops::read_window(p.getWindow(), c);
    return ops_.consume(
        std::move(c), p.getConsumer(), window,
        [ctx](const std::string& tag) mutable { ctx.getResults().setConsumerTag(tag); });
  }

  kj::Promise<void> commitOffset(CommitOffsetContext ctx) override {
    auto p = ctx.getParams();
    stream_command cmd{stream_command::commit, text(p.getQueue()), text(p.getGroup()),
                       static_cast<int64_t>(std::min<uint64_t>(p.getOffset(), INT64_MAX))};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](caf::message m) mutable {
          const auto& reply = m.get_as<stream_reply>(0);
          if (!reply.groups.empty()) write_group(reply.groups[0], ctx.getResults().initGroup());
        });
  }

  kj::Promise<void> listGroups(ListGroupsContext ctx) override {
    stream_command cmd{stream_command::groups, text(ctx.getParams().getQueue()), {}, 0};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](caf::message m) mutable {
          const auto& groups = m.get_as<stream_reply>(0).groups;
          auto out = ctx.getResults().initGroups(static_cast<unsigned>(groups.size()));
          for (unsigned i = 0; i < out.size(); ++i) write_group(groups[i], out[i]);
        });
  }

  kj::Promise<void> readOffset(ReadOffsetContext ctx) override {
    auto p = ctx.getParams();
    stream_command cmd{stream_command::read,
                       text(p.getQueue()),
                       {},
                       static_cast<int64_t>(std::min<uint64_t>(p.getOffset(), INT64_MAX))};
    return ask([&](uint64_t r) { conn().stream(r, id_, std::move(cmd)); })
        .then([ctx](caf::message m) mutable {
          const auto& reply = m.get_as<stream_reply>(0);
          ctx.getResults().setFound(reply.found);
          if (!reply.found) return;
          delivery d{0, false, reply.delivery.msg, 0, reply.delivery.stream_offset};
          write_delivery(d, {}, ctx.getResults().initDelivery());
        });
  }

  kj::Promise<void> peek(PeekContext ctx) override {
    auto p = ctx.getParams();
    auto queue = text(p.getQueue());
    uint64_t from = p.getFrom();
    uint32_t count = p.getCount();
    if (count == 0 || count > 1000)
      throw_failure({reply_code::precondition_failed, "peek count must be from 1 to 1000"});
    return ask([&](uint64_t r) { conn().peek(r, id_, queue, from, count); })
        .then([ctx](caf::message m) mutable {
          const auto& found = m.get_as<std::vector<delivery>>(0);
          auto out = ctx.getResults().initDeliveries(static_cast<unsigned>(found.size()));
          for (unsigned i = 0; i < out.size(); ++i) write_delivery(found[i], {}, out[i]);
        });
  }

  kj::Promise<void> cancel(CancelContext ctx) override {
    return ops_.cancel(text(ctx.getParams().getConsumerTag()));
  }

  kj::Promise<void> get(GetContext ctx) override {
    auto p = ctx.getParams();
    return ops_.get(text(p.getQueue()), p.getNoAck(), ctx.getResults());
  }

  kj::Promise<void> ack(AckContext ctx) override { return ops_.ack(ctx); }

  kj::Promise<void> ackEach(AckEachContext ctx) override {
    return ops_.ack_each(ctx.getParams().getDeliveryTags());
  }

  kj::Promise<void> nack(NackContext ctx) override { return ops_.nack(ctx); }

  kj::Promise<void> reject(RejectContext ctx) override { return ops_.reject(ctx); }

  kj::Promise<void> qos(QosContext ctx) override {
    uint32_t prefetch = ctx.getParams().getPrefetch();
    return ask([&](uint64_t r) { conn().qos(r, id_, prefetch); }).ignoreResult();
  }

  kj::Promise<void> confirmSelect(ConfirmSelectContext) override {
    return ask([&](uint64_t r) { conn().confirm_select(r, id_); }).ignoreResult();
  }

  kj::Promise<void> lookup(LookupContext ctx) override {
    auto raw = ctx.getParams().getMessageId();
    message_id id;
    if (!message_id_from_bytes(
            std::string_view(reinterpret_cast<const char*>(raw.begin()), raw.size()), id))
      throw_failure({reply_code::syntax_error,
                     "a message id is 16 bytes, got " + std::to_string(raw.size())});
    return ask([&](uint64_t r) { conn().lookup(r, id_, id); }).then([ctx](caf::message m) mutable {
      const auto& reply = m.get_as<lookup_reply>(0);
      auto res = ctx.getResults().initResult();
      if (!reply.found) {
        res.setNotFound();
        return;
      }
      auto found = res.initFound();
      found.setQueue(reply.queue);
      found.setState(reply.state);
      delivery d{0, reply.delivery.redelivered, reply.delivery.msg, 0,
                 reply.delivery.stream_offset};
      write_delivery(d, {}, found.initDelivery());
    });
  }

  kj::Promise<void> close(CloseContext) override {
    closed_ = true;
    return ask([&](uint64_t r) { conn().close_channel(r, id_); }).ignoreResult();
  }

  kj::Promise<void> recover(RecoverContext) override {
    return ask([&](uint64_t r) { conn().recover(r, id_); }).ignoreResult();
  }

 private:
  connection_ref& conn() { return ops_.conn(); }

  template <class Send>
  kj::Promise<caf::message> ask(Send&& send) {
    return ops_.ask(std::forward<Send>(send));
  }

  channel_ops ops_;
  uint16_t id_;
  bool closed_ = false;
};

class connection_impl final : public rpc::Connection::Server {
 public:
  explicit connection_impl(std::shared_ptr<rpc_session> session) : session_(std::move(session)) {}

 protected:
  kj::Promise<void> openChannel(OpenChannelContext ctx) override {
    auto id = session_->allocate_channel();
    if (id == 0)
      throw_failure({reply_code::resource_error, "this connection has used all 65535 channels"});
    return ask([&](uint64_t r) { conn().open_channel(r, id); })
        .then([this, ctx, id](caf::message) mutable {
          ctx.getResults().setChannel(kj::heap<channel_impl>(session_, id));
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
        .then([ctx](caf::message m) mutable {
          const auto& limits = m.get_as<vhost_limits>(0);
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
    return ask([&](uint64_t r) { conn().list_users(r); }).then([ctx](caf::message m) mutable {
      const auto& users = m.get_as<std::vector<user_record>>(0);
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
    return ask([&](uint64_t r) { conn().list_permissions(r); }).then([ctx](caf::message m) mutable {
      const auto& rows = m.get_as<std::vector<permission_record>>(0);
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
        .then([ctx](caf::message m) mutable {
          wire::write_definitions(m.get_as<definitions>(0), ctx.getResults().initDefinitions());
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
    return ask([&](uint64_t r) { conn().list_vhosts(r); }).then([ctx](caf::message m) mutable {
      const auto& names = m.get_as<std::vector<std::string>>(0);
      auto list = ctx.getResults().initNames(static_cast<unsigned>(names.size()));
      for (unsigned i = 0; i < names.size(); ++i) list.set(i, names[i]);
    });
  }

  kj::Promise<void> listExchanges(ListExchangesContext ctx) override {
    return list<exchange_info>(&connection_ref::list_exchanges, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initExchanges(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_exchange(rows[i], out[i]);
    });
  }

  kj::Promise<void> listQueues(ListQueuesContext ctx) override {
    return list<queue_info>(&connection_ref::list_queues, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initQueues(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_queue(rows[i], out[i]);
    });
  }

  kj::Promise<void> listBindings(ListBindingsContext ctx) override {
    return list<binding_info>(&connection_ref::list_bindings, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initBindings(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_binding(rows[i], out[i]);
    });
  }

  kj::Promise<void> listConsumers(ListConsumersContext ctx) override {
    return list<consumer_info>(&connection_ref::list_consumers, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initConsumers(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_consumer(rows[i], out[i]);
    });
  }

  kj::Promise<void> listConnections(ListConnectionsContext ctx) override {
    return list<connection_info>(
        &connection_ref::list_connections, [ctx](const auto& rows) mutable {
          auto out = ctx.getResults().initConnections(static_cast<unsigned>(rows.size()));
          for (unsigned i = 0; i < rows.size(); ++i) write_connection(rows[i], out[i]);
        });
  }
  kj::Promise<void> listNodes(ListNodesContext ctx) override {
    return list<node_info>(&connection_ref::list_nodes, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initNodes(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_node(rows[i], out[i]);
    });
  }

  kj::Promise<void> forgetNode(ForgetNodeContext ctx) override {
    std::string name = ctx.getParams().getName();
    return ask([&](uint64_t r) { conn().forget_node(r, std::move(name)); }).ignoreResult();
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
    return list<grant_record>(&connection_ref::list_grants, [ctx](const auto& rows) mutable {
      auto out = ctx.getResults().initGrants(static_cast<unsigned>(rows.size()));
      for (unsigned i = 0; i < rows.size(); ++i) write_grant(rows[i], out[i]);
    });
  }

  kj::Promise<void> revokeGrant(RevokeGrantContext ctx) override {
    auto token = text(ctx.getParams().getToken());
    return ask([&](uint64_t r) { conn().revoke_grant(r, std::move(token)); }).ignoreResult();
  }

  kj::Promise<void> nodeStats(NodeStatsContext ctx) override {
    return ask([&](uint64_t r) { conn().node_stats(r); }).then([ctx](caf::message m) mutable {
      write_node_stats(m.get_as<node_stats_info>(0), ctx.getResults().initStats());
    });
  }

 private:
  connection_ref& conn() { return session_->conn(); }

  template <class Send>
  kj::Promise<caf::message> ask(Send&& send) {
    return session_->request(std::forward<Send>(send));
  }

  // Makes the grant (stored before its token comes back), then opens its capability as a
  // session of its own, logged in by the token.
  kj::Promise<opened_grant> grant(grant_record what, uint64_t ttl_s) {
    auto ttl = static_cast<int64_t>(std::min<uint64_t>(ttl_s, INT64_MAX));
    auto session = session_;
    return ask([&](uint64_t r) { conn().grant(r, std::move(what), ttl); })
        .then([session](caf::message m) {
          auto token = m.get_as<std::string>(0);
          return open_grant(session->open_by_token(token), token);
        });
  }

  template <class Row, class Write>
  kj::Promise<void> list(void (connection_ref::*send)(uint64_t), Write write) {
    return ask([&](uint64_t r) { (conn().*send)(r); }).then([write](caf::message m) mutable {
      write(m.get_as<std::vector<Row>>(0));
    });
  }

  std::shared_ptr<rpc_session> session_;
};

class broker_impl final : public rpc::Broker::Server {
 public:
  broker_impl(caf::actor_system& system, caf::actor node,
              std::shared_ptr<transport::loop_bridge> bridge, peer_address peer,
              std::shared_ptr<bool> logged_in)
      : system_(system),
        node_(std::move(node)),
        bridge_(std::move(bridge)),
        peer_(std::move(peer)),
        logged_in_(std::move(logged_in)) {}

 protected:
  kj::Promise<void> connect(ConnectContext ctx) override {
    auto p = ctx.getParams();
    client_hello hello{text(p.getVhost()),      text(p.getUser()), text(p.getPassword()),
                       text(p.getClientName()), peer_.name,        peer_.loopback};
    if (hello.client_name.empty()) hello.client_name = peer_.name;
    hello.bad_settle_closes_channel = false;
    auto session = rpc_session::create(system_, node_, bridge_, std::move(hello));
    return session->request([&](uint64_t r) { session->conn().open(r); })
        .then([ctx, session, logged_in = logged_in_](caf::message) mutable {
          *logged_in = true;
          ctx.getResults().setConnection(kj::heap<connection_impl>(session));
        });
  }

  kj::Promise<void> restore(RestoreContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      auto out = ctx.getResults().initGranted();
      if (g.kind == grant_kind::publisher)
        out.setPublisher(kj::mv(g.publisher));
      else
        out.setConsumer(kj::mv(g.consumer));
    });
  }

  kj::Promise<void> restorePublisher(RestorePublisherContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      if (g.kind != grant_kind::publisher) refuse_kind("consumer", "restoreConsumer");
      ctx.getResults().setPublisher(kj::mv(g.publisher));
    });
  }

  kj::Promise<void> restoreConsumer(RestoreConsumerContext ctx) override {
    return open_token(ctx.getParams().getToken()).then([ctx](opened_grant g) mutable {
      if (g.kind != grant_kind::consumer) refuse_kind("publisher", "restorePublisher");
      ctx.getResults().setConsumer(kj::mv(g.consumer));
    });
  }

 private:
  // Logs in by a grant's token, as its own session, and opens the grant's capability.
  kj::Promise<opened_grant> open_token(capnp::Data::Reader raw) {
    std::string token(reinterpret_cast<const char*>(raw.begin()), raw.size());
    if (token.empty())
      throw_failure({reply_code::access_refused, "login refused: the grant token is empty"});
    client_hello hello;
    hello.client_name = peer_.name;
    hello.peer = peer_.name;
    hello.loopback = peer_.loopback;
    hello.bad_settle_closes_channel = false;
    hello.grant_token = token;
    auto session = rpc_session::create(system_, node_, bridge_, std::move(hello));
    return open_grant(session, std::move(token)).then([logged_in = logged_in_](opened_grant g) {
      *logged_in = true;
      return g;
    });
  }

  // The grant opened is dropped with the exception, which closes its session.
  [[noreturn]] static void refuse_kind(const char* kind, const char* method) {
    throw_failure({reply_code::precondition_failed,
                   std::string("this token is a ") + kind + " grant's; open it with " + method});
  }

  caf::actor_system& system_;
  caf::actor node_;
  std::shared_ptr<transport::loop_bridge> bridge_;
  peer_address peer_;
  std::shared_ptr<bool> logged_in_;  // set once connect or a restore succeeded
};

// One accepted TCP connection and the RPC system serving it.
struct served_client {
  served_client(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap,
                capnp::ReaderOptions options)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER, options),
        rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {}

  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

// Calls of one connection that have not returned, in words, past which the node stops reading
// it (broker.capnp, PAST THE RULE): a client cannot fill the node's memory by never waiting.
constexpr size_t call_flow_limit_words = 8 * 1024 * 1024;  // 64 MiB

}  // namespace

rpc_server::rpc_server(caf::actor_system& system, caf::actor node, std::string name)
    : system_(system), node_(std::move(node)), listener_(std::move(name)) {}

rpc_server::~rpc_server() {
  stop();
}

// Resolves (ending the connection) when the client has not logged in within the timeout.
kj::Promise<void> handshake_deadline(kj::Timer& timer, int64_t ms, std::shared_ptr<bool> logged_in,
                                     std::string peer) {
  if (ms <= 0) return kj::NEVER_DONE;
  return timer.afterDelay(ms * kj::MILLISECONDS)
      .then([logged_in, ms, peer = std::move(peer)]() -> kj::Promise<void> {
        if (*logged_in) return kj::NEVER_DONE;
        log(log_level::info, "rpc",
            "dropping " + peer + ": no connect within " + std::to_string(ms) + " ms");
        return kj::READY_NOW;
      });
}

uint16_t rpc_server::start(const std::string& bind_address, uint16_t port,
                           const door_limits& limits, std::optional<listener_tls> tls) {
  return listener_.start(
      bind_address, port,
      [this, limits](const loop_context& loop) -> serve_function {
        auto bridge = loop.bridge;
        auto* timer = &loop.timer;
        return [this, bridge, limits, timer](kj::Own<kj::AsyncIoStream> stream,
                                             const peer_address& peer) {
          capnp::ReaderOptions options;
          options.traversalLimitInWords =
              std::max<uint64_t>(max_message_words, limits.max_message_bytes / 4 + (1 << 20));
          auto logged_in = std::make_shared<bool>(false);
          auto guarded = kj::heap<size_guarded_stream>(kj::mv(stream), max_message_before_login,
                                                       logged_in, peer.name);
          auto client = kj::heap<served_client>(
              kj::mv(guarded), kj::heap<broker_impl>(system_, node_, bridge, peer, logged_in),
              options);
          // One call larger than the limit is still read: the limit only stops the next.
          client->rpc.setFlowLimit(call_flow_limit_words);
          auto& network = client->network;
          return network.onDisconnect()
              .exclusiveJoin(
                  handshake_deadline(*timer, limits.handshake_timeout_ms, logged_in, peer.name))
              .attach(kj::mv(client));
        };
      },
      std::move(tls));
}

void rpc_server::stop() {
  listener_.stop();
}

}  // namespace warren::net
