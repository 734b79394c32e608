#include "net/capnp/wire_convert.hpp"

#include <kj/exception.h>

namespace warren::net {

message_ptr read_outbound(rpc::OutboundMessage::Reader in) {
  return read_outbound(in, text(in.getExchange()));
}

message_ptr read_outbound(rpc::OutboundMessage::Reader in, std::string exchange) {
  auto m = std::make_shared<message>();
  m->id = next_message_id();
  m->exchange = std::move(exchange);
  m->routing_key = text(in.getRoutingKey());
  m->mandatory = in.getMandatory();
  m->set_properties(read_properties(in.getProperties()));
  auto body = in.getBody();
  m->body.assign(reinterpret_cast<const char*>(body.begin()), body.size());
  return m;
}

void write_delivery(const delivery& d, const std::string& consumer_tag,
                    rpc::Delivery::Builder out) {
  out.setDeliveryTag(d.tag);
  if (!consumer_tag.empty()) out.setConsumerTag(consumer_tag);
  out.setRedelivered(d.redelivered);
  const auto& m = *d.msg;
  out.setExchange(m.exchange);
  out.setRoutingKey(m.routing_key);
  out.setMessageId(kj::arrayPtr(m.id.bytes.data(), m.id.bytes.size()));
  write_properties(m.properties(), out.initProperties());
  out.setBody(bytes_of(m.body));
  out.setMessageCount(d.message_count);
  out.setStreamOffset(d.stream_offset);
}

void write_group(const group_info& g, rpc::GroupInfo::Builder out) {
  out.setGroup(g.group);
  out.setCommittedOffset(g.committed);
  out.setLag(g.lag);
  out.setConsumers(g.consumers);
}

stream_offset_spec read_stream_offset(rpc::StreamOffset::Reader in) {
  switch (in.which()) {
    case rpc::StreamOffset::FIRST:
      return {stream_offset_spec::first, 0};
    case rpc::StreamOffset::LAST:
      return {stream_offset_spec::last, 0};
    case rpc::StreamOffset::NEXT:
      return {stream_offset_spec::next, 0};
    case rpc::StreamOffset::OFFSET:
      if (in.getOffset() > static_cast<uint64_t>(INT64_MAX))
        throw_failure({reply_code::precondition_failed,
                       "stream offset " + std::to_string(in.getOffset()) + " is out of range"});
      return {stream_offset_spec::offset, static_cast<int64_t>(in.getOffset())};
    case rpc::StreamOffset::TIMESTAMP:
      return {stream_offset_spec::timestamp, in.getTimestamp()};
    case rpc::StreamOffset::UNSET:
      break;
  }
  return {};
}

void write_traffic(const traffic_counters& t, rpc::Traffic::Builder out) {
  out.setPublished(t.published);
  out.setDelivered(t.delivered);
  out.setAcked(t.acked);
  out.setRedelivered(t.redelivered);
  out.setBytesIn(t.bytes_in);
  out.setBytesOut(t.bytes_out);
}

void write_exchange(const exchange_info& info, rpc::ExchangeInfo::Builder out) {
  out.setName(info.spec.name);
  out.setVhost(info.vhost);
  out.setType(to_string(info.spec.type));
  out.setDurable(info.spec.durable);
  out.setAutoDelete(info.spec.auto_delete);
  out.setInternal(info.spec.internal);
  write_table(info.spec.arguments,
              out.initArguments(static_cast<unsigned>(info.spec.arguments.size())));
}

void write_queue(const queue_info& info, rpc::QueueInfo::Builder out) {
  out.setName(info.spec.name);
  out.setVhost(info.vhost);
  out.setDurable(info.spec.durable);
  out.setExclusive(info.spec.exclusive);
  out.setAutoDelete(info.spec.auto_delete);
  write_table(info.spec.arguments,
              out.initArguments(static_cast<unsigned>(info.spec.arguments.size())));
  out.setMessagesReady(info.ready);
  out.setMessagesUnacked(info.unacked);
  out.setConsumers(info.consumers);
  write_traffic(info.traffic, out.initTraffic());
  out.setBytesOnDisk(info.bytes_on_disk);
  out.setSegments(info.segments);
  out.setUnavailable(info.unavailable);
  out.setNode(info.node);
  out.setMessagesPagedOut(info.paged_out);
  out.setMemory(info.memory_bytes);
  out.setType(info.stream ? "stream" : "classic");
  out.setFirstOffset(info.first_offset);
  out.setLastOffset(info.last_offset);
  if (!info.groups.empty()) {
    auto groups = out.initGroups(static_cast<unsigned>(info.groups.size()));
    for (unsigned i = 0; i < groups.size(); ++i) write_group(info.groups[i], groups[i]);
  }
}

void write_binding(const binding_info& info, rpc::BindingInfo::Builder out) {
  out.setVhost(info.vhost);
  out.setExchange(info.spec.exchange);
  out.setQueue(info.spec.destination);
  out.setToExchange(info.spec.to_exchange);
  out.setKey(info.spec.key);
  write_table(info.spec.arguments,
              out.initArguments(static_cast<unsigned>(info.spec.arguments.size())));
}

void write_consumer(const consumer_info& info, rpc::ConsumerInfo::Builder out) {
  out.setVhost(info.vhost);
  out.setQueue(info.queue);
  out.setConsumerTag(info.tag);
  out.setChannel(info.channel);
  out.setConnection(info.connection_name);
  out.setNoAck(info.no_ack);
  out.setExclusive(info.exclusive);
  out.setPrefetch(info.prefetch);
  out.setUnacked(info.unacked);
}

void write_node(const node_info& info, rpc::NodeInfo::Builder out) {
  out.setName(info.name);
  out.setAddress(info.address);
  out.setRunning(info.running);
  out.setLocal(info.local);
  out.setQueues(info.queues);
  out.setMetadataLog(info.has_log);
  out.setVoter(info.voter);
  out.setLeader(info.leader);
  out.setMetadataLogApplied(info.log_applied);
}

void write_connection(const connection_info& info, rpc::ConnectionInfo::Builder out) {
  out.setName(info.name);
  out.setPeer(info.peer);
  out.setVhost(info.vhost);
  out.setUser(info.user);
  out.setChannels(info.channels);
  write_traffic(info.traffic, out.initTraffic());
}

void write_node_stats(const node_stats_info& info, rpc::NodeStats::Builder out) {
  out.setUptimeMs(info.uptime_ms);
  out.setRssBytes(info.rss_bytes);
  out.setMemoryBytes(info.memory_bytes);
  auto queues = out.initQueues(static_cast<unsigned>(info.queues.size()));
  for (unsigned i = 0; i < info.queues.size(); ++i) write_queue(info.queues[i], queues[i]);
  auto conns = out.initConnections(static_cast<unsigned>(info.connections.size()));
  for (unsigned i = 0; i < info.connections.size(); ++i)
    write_connection(info.connections[i], conns[i]);
}

kj::Exception to_exception(const broker_failure& failure) {
  return kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__,
                       kj::heapString(to_string(failure)));
}

void throw_failure(const broker_failure& failure) {
  kj::throwFatalException(to_exception(failure));
}

void write_grant(const grant_record& g, rpc::GrantInfo::Builder out) {
  out.setTokenPrefix(g.token_prefix);
  out.setKind(g.kind == grant_kind::publisher ? rpc::GrantKind::PUBLISHER
                                              : rpc::GrantKind::CONSUMER);
  out.setVhost(g.vhost);
  out.setUser(g.user);
  out.setTarget(g.target);
  out.setRoutingKeyPattern(g.key_pattern);
  out.setCreatedAt(g.created_ms);
  out.setExpiresAt(g.expires_ms);
}

}  // namespace warren::net
