#include "core/wire_definitions.hpp"

#include "core/wire_fields.hpp"

#include <stdexcept>

namespace warren::wire {

namespace {

unsigned count(size_t n) {
  return static_cast<unsigned>(n);
}

std::vector<std::string> read_texts(capnp::List<capnp::Text>::Reader list) {
  std::vector<std::string> out;
  for (auto t : list) out.push_back(text(t));
  return out;
}

void write_texts(const std::vector<std::string>& in, capnp::List<capnp::Text>::Builder out) {
  for (unsigned i = 0; i < in.size(); ++i) out.set(i, in[i]);
}

std::pair<std::string, exchange_spec> read_exchange(rpc::ExchangeInfo::Reader in) {
  exchange_spec spec;
  spec.name = text(in.getName());
  auto type = text(in.getType());
  if (!parse_exchange_type(type, spec.type))
    throw std::invalid_argument("exchange '" + spec.name + "' in vhost '" + text(in.getVhost()) +
                                "' has the unknown type '" + type + "'");
  spec.durable = in.getDurable();
  spec.auto_delete = in.getAutoDelete();
  spec.internal = in.getInternal();
  spec.arguments = read_table(in.getArguments());
  return {text(in.getVhost()), std::move(spec)};
}

std::pair<std::string, queue_spec> read_queue(rpc::QueueInfo::Reader in) {
  queue_spec spec;
  spec.name = text(in.getName());
  spec.durable = in.getDurable();
  spec.exclusive = in.getExclusive();
  spec.auto_delete = in.getAutoDelete();
  spec.arguments = read_table(in.getArguments());
  return {text(in.getVhost()), std::move(spec)};
}

std::pair<std::string, binding_spec> read_binding(rpc::BindingInfo::Reader in) {
  binding_spec spec;
  spec.exchange = text(in.getExchange());
  spec.destination = text(in.getQueue());
  spec.key = text(in.getKey());
  spec.arguments = read_table(in.getArguments());
  spec.to_exchange = in.getToExchange();
  return {text(in.getVhost()), std::move(spec)};
}

}  // namespace

definitions read_definitions(rpc::Definitions::Reader in) {
  definitions out;
  for (auto u : in.getUsers())
    out.users.push_back({text(u.getName()), text(u.getPasswordHash()), read_texts(u.getTags())});
  for (auto v : in.getVhosts())
    out.vhosts.push_back({text(v.getName()), {v.getMaxConnections(), v.getMaxQueues()}});
  for (auto p : in.getPermissions())
    out.permissions.push_back({text(p.getUser()), text(p.getVhost()), text(p.getConfigure()),
                               text(p.getWrite()), text(p.getRead())});
  for (auto e : in.getExchanges()) out.exchanges.push_back(read_exchange(e));
  for (auto q : in.getQueues()) out.queues.push_back(read_queue(q));
  for (auto b : in.getBindings()) out.bindings.push_back(read_binding(b));
  return out;
}

void write_definitions(const definitions& in, rpc::Definitions::Builder out) {
  auto users = out.initUsers(count(in.users.size()));
  for (unsigned i = 0; i < in.users.size(); ++i) {
    users[i].setName(in.users[i].name);
    users[i].setPasswordHash(in.users[i].password_hash);
    write_texts(in.users[i].tags, users[i].initTags(count(in.users[i].tags.size())));
  }
  auto vhosts = out.initVhosts(count(in.vhosts.size()));
  for (unsigned i = 0; i < in.vhosts.size(); ++i) {
    vhosts[i].setName(in.vhosts[i].name);
    vhosts[i].setMaxConnections(in.vhosts[i].limits.max_connections);
    vhosts[i].setMaxQueues(in.vhosts[i].limits.max_queues);
  }
  auto permissions = out.initPermissions(count(in.permissions.size()));
  for (unsigned i = 0; i < in.permissions.size(); ++i) {
    const auto& p = in.permissions[i];
    permissions[i].setUser(p.user);
    permissions[i].setVhost(p.vhost);
    permissions[i].setConfigure(p.configure);
    permissions[i].setWrite(p.write);
    permissions[i].setRead(p.read);
  }
  auto exchanges = out.initExchanges(count(in.exchanges.size()));
  for (unsigned i = 0; i < in.exchanges.size(); ++i) {
    const auto& [vhost, e] = in.exchanges[i];
    exchanges[i].setVhost(vhost);
    exchanges[i].setName(e.name);
    exchanges[i].setType(to_string(e.type));
    exchanges[i].setDurable(e.durable);
    exchanges[i].setAutoDelete(e.auto_delete);
    exchanges[i].setInternal(e.internal);
    write_table(e.arguments, exchanges[i].initArguments(count(e.arguments.size())));
  }
  auto queues = out.initQueues(count(in.queues.size()));
  for (unsigned i = 0; i < in.queues.size(); ++i) {
    const auto& [vhost, q] = in.queues[i];
    queues[i].setVhost(vhost);
    queues[i].setName(q.name);
    queues[i].setDurable(q.durable);
    queues[i].setExclusive(q.exclusive);
    queues[i].setAutoDelete(q.auto_delete);
    write_table(q.arguments, queues[i].initArguments(count(q.arguments.size())));
  }
  auto bindings = out.initBindings(count(in.bindings.size()));
  for (unsigned i = 0; i < in.bindings.size(); ++i) {
    const auto& [vhost, b] = in.bindings[i];
    bindings[i].setVhost(vhost);
    bindings[i].setExchange(b.exchange);
    bindings[i].setQueue(b.destination);
    bindings[i].setKey(b.key);
    bindings[i].setToExchange(b.to_exchange);
    write_table(b.arguments, bindings[i].initArguments(count(b.arguments.size())));
  }
}

}  // namespace warren::wire
