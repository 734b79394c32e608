// Conversions between the Cap'n Proto API types (capnp/broker.capnp) and the broker's own.
// Readers validate only what the schema cannot express; names and keys are checked by the
// actors, so both front doors share one set of rules.
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/protocol.hpp"
#include "broker.capnp.h"
#include "core/wire_fields.hpp"

namespace warren::net {

// The core's Cap'n Proto conversions, used throughout the Cap'n Proto door.
using wire::bytes;
using wire::bytes_of;
using wire::read_properties;
using wire::read_table;
using wire::text;
using wire::write_properties;
using wire::write_table;

/// A fresh broker message (with a new id) from what the publisher sent.
message_ptr read_outbound(rpc::OutboundMessage::Reader in);
/// The same, to `exchange` whatever the message names.
message_ptr read_outbound(rpc::OutboundMessage::Reader in, std::string exchange);

void write_delivery(const delivery& d, const std::string& consumer_tag, rpc::Delivery::Builder out);

void write_exchange(const exchange_info& info, rpc::ExchangeInfo::Builder out);
void write_queue(const queue_info& info, rpc::QueueInfo::Builder out);
void write_traffic(const traffic_counters& t, rpc::Traffic::Builder out);
void write_group(const group_info& g, rpc::GroupInfo::Builder out);
/// An offset spec as the client sent it; an offset beyond int64 is PRECONDITION_FAILED.
stream_offset_spec read_stream_offset(rpc::StreamOffset::Reader in);
void write_node_stats(const node_stats_info& info, rpc::NodeStats::Builder out);
void write_binding(const binding_info& info, rpc::BindingInfo::Builder out);
void write_consumer(const consumer_info& info, rpc::ConsumerInfo::Builder out);
void write_connection(const connection_info& info, rpc::ConnectionInfo::Builder out);
void write_node(const node_info& info, rpc::NodeInfo::Builder out);
void write_grant(const grant_record& g, rpc::GrantInfo::Builder out);

/// Throws a kj exception whose description is "CODE_NAME: text" (the API's error format).
[[noreturn]] void throw_failure(const broker_failure& failure);

/// The same, as a kj::Exception value (for rejecting promises).
kj::Exception to_exception(const broker_failure& failure);

}  // namespace warren::net
