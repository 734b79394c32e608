#include "client/client_wire.hpp"

#include "core/wire_fields.hpp"

namespace warren::client {

using wire::bytes;
using wire::bytes_of;
using wire::text;

delivery read_delivery(rpc::Delivery::Reader in) {
  delivery d;
  d.delivery_tag = in.getDeliveryTag();
  d.consumer_tag = text(in.getConsumerTag());
  d.redelivered = in.getRedelivered();
  d.exchange = text(in.getExchange());
  d.routing_key = text(in.getRoutingKey());
  message_id_from_bytes(bytes(in.getMessageId()), d.id);
  d.properties = wire::read_properties(in.getProperties());
  d.body = bytes(in.getBody());
  d.message_count = in.getMessageCount();
  d.stream_offset = in.getStreamOffset();
  return d;
}

group_row read_group_row(rpc::GroupInfo::Reader in) {
  return {text(in.getGroup()), in.getCommittedOffset(), in.getLag(), in.getConsumers()};
}

void write_stream_offset(const stream_offset& o, rpc::StreamOffset::Builder out) {
  switch (o.kind) {
    case stream_offset::first:
      return out.setFirst();
    case stream_offset::last:
      return out.setLast();
    case stream_offset::next:
      return out.setNext();
    case stream_offset::offset:
      return out.setOffset(static_cast<uint64_t>(o.value < 0 ? 0 : o.value));
    case stream_offset::timestamp:
      return out.setTimestamp(o.value);
    case stream_offset::unset:
      return out.setUnset();
  }
}

void write_outbound(const outbound_message& m, rpc::OutboundMessage::Builder out) {
  out.setExchange(m.exchange);
  out.setRoutingKey(m.routing_key);
  out.setMandatory(m.mandatory);
  wire::write_properties(m.properties, out.initProperties());
  out.setBody(bytes_of(m.body));
}

publish_result read_publish_result(rpc::PublishResult::Reader in) {
  publish_result r;
  message_id_from_bytes(bytes(in.getId()), r.id);
  r.outcome = static_cast<publish_outcome>(in.getOutcome());
  return r;
}

exchange_row read_exchange_row(rpc::ExchangeInfo::Reader in) {
  return {text(in.getName()),
          text(in.getVhost()),
          text(in.getType()),
          in.getDurable(),
          in.getAutoDelete(),
          in.getInternal(),
          wire::read_table(in.getArguments())};
}

traffic_counters read_traffic(rpc::Traffic::Reader in) {
  traffic_counters t;
  t.published = in.getPublished();
  t.delivered = in.getDelivered();
  t.acked = in.getAcked();
  t.redelivered = in.getRedelivered();
  t.bytes_in = in.getBytesIn();
  t.bytes_out = in.getBytesOut();
  return t;
}

queue_row read_queue_row(rpc::QueueInfo::Reader in) {
  queue_row q;
  q.name = text(in.getName());
  q.vhost = text(in.getVhost());
  q.durable = in.getDurable();
  q.exclusive = in.getExclusive();
  q.auto_delete = in.getAutoDelete();
  q.arguments = wire::read_table(in.getArguments());
  q.messages_ready = in.getMessagesReady();
  q.messages_unacked = in.getMessagesUnacked();
  q.consumers = in.getConsumers();
  q.traffic = read_traffic(in.getTraffic());
  q.bytes_on_disk = in.getBytesOnDisk();
  q.segments = in.getSegments();
  q.unavailable = text(in.getUnavailable());
  q.node = text(in.getNode());
  q.messages_paged_out = in.getMessagesPagedOut();
  q.memory = in.getMemory();
  if (in.hasType()) q.type = text(in.getType());
  q.first_offset = in.getFirstOffset();
  q.last_offset = in.getLastOffset();
  for (auto g : in.getGroups()) q.groups.push_back(read_group_row(g));
  return q;
}

binding_row read_binding_row(rpc::BindingInfo::Reader in) {
  return {text(in.getVhost()),
          text(in.getExchange()),
          text(in.getQueue()),
          text(in.getKey()),
          wire::read_table(in.getArguments()),
          in.getToExchange()};
}

consumer_row read_consumer_row(rpc::ConsumerInfo::Reader in) {
  return {text(in.getVhost()),      text(in.getQueue()), text(in.getConsumerTag()),
          text(in.getConnection()), in.getChannel(),     in.getNoAck(),
          in.getExclusive(),        in.getPrefetch(),    in.getUnacked()};
}

connection_row read_connection_row(rpc::ConnectionInfo::Reader in) {
  return {text(in.getName()), text(in.getPeer()), text(in.getVhost()),
          text(in.getUser()), in.getChannels(),   read_traffic(in.getTraffic())};
}

grant_row read_grant_row(rpc::GrantInfo::Reader in) {
  return {text(in.getTokenPrefix()),
          in.getKind() == rpc::GrantKind::PUBLISHER ? "publisher" : "consumer",
          text(in.getVhost()),
          text(in.getUser()),
          text(in.getTarget()),
          text(in.getRoutingKeyPattern()),
          in.getCreatedAt(),
          in.getExpiresAt()};
}

node_row read_node_row(rpc::NodeInfo::Reader in) {
  return {text(in.getName()), text(in.getAddress()), in.getRunning(),
          in.getLocal(),      in.getQueues(),        in.getMetadataLog(),
          in.getVoter(),      in.getLeader(),        in.getMetadataLogApplied()};
}

node_stats read_node_stats(rpc::NodeStats::Reader in) {
  node_stats out;
  out.uptime_ms = in.getUptimeMs();
  out.rss_bytes = in.getRssBytes();
  out.memory_bytes = in.getMemoryBytes();
  for (auto q : in.getQueues()) out.queues.push_back(read_queue_row(q));
  for (auto c : in.getConnections()) out.connections.push_back(read_connection_row(c));
  return out;
}

}  // namespace warren::client
