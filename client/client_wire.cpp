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
  return d;
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
  return {text(in.getName()),        text(in.getVhost()),
          in.getDurable(),           in.getExclusive(),
          in.getAutoDelete(),        wire::read_table(in.getArguments()),
          in.getMessagesReady(),     in.getMessagesUnacked(),
          in.getConsumers(),         read_traffic(in.getTraffic()),
          in.getBytesOnDisk(),       in.getSegments(),
          text(in.getUnavailable()), text(in.getNode()),
          in.getMessagesPagedOut(),  in.getMemory()};
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

node_row read_node_row(rpc::NodeInfo::Reader in) {
  return {text(in.getName()), text(in.getAddress()), in.getRunning(), in.getLocal(),
          in.getQueues()};
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
