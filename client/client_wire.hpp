// Conversions between the client's plain types and the Cap'n Proto API (private to the client).
#pragma once

#include "broker.capnp.h"
#include "warren/types.hpp"

namespace warren::client {

delivery read_delivery(rpc::Delivery::Reader in);
void write_outbound(const outbound_message& m, rpc::OutboundMessage::Builder out);
publish_result read_publish_result(rpc::PublishResult::Reader in);

exchange_row read_exchange_row(rpc::ExchangeInfo::Reader in);
queue_row read_queue_row(rpc::QueueInfo::Reader in);
node_stats read_node_stats(rpc::NodeStats::Reader in);
binding_row read_binding_row(rpc::BindingInfo::Reader in);
consumer_row read_consumer_row(rpc::ConsumerInfo::Reader in);
connection_row read_connection_row(rpc::ConnectionInfo::Reader in);
node_row read_node_row(rpc::NodeInfo::Reader in);
grant_row read_grant_row(rpc::GrantInfo::Reader in);
group_row read_group_row(rpc::GroupInfo::Reader in);
void write_stream_offset(const stream_offset& o, rpc::StreamOffset::Builder out);

}  // namespace warren::client
