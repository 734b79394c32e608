// Every type that travels in a message between Warren's actors, in one list.
//
// CAF's middleman serializes a message by the registered names of its element types, so each of
// these must be registered (on every node) before actors can talk across nodes. The node's
// configuration and the round-trip test both use this list, so a type added to a protocol but
// not here shows up in the test, not in a cluster.
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/exchange_protocol.hpp"
#include "actors/common/protocol.hpp"
#include "core/declarations.hpp"
#include "core/message.hpp"
#include "core/outcomes.hpp"
#include "persistence/lmdb_store.hpp"

#include <caf/actor_system_config.hpp>

#include <cstdint>
#include <vector>

namespace warren {

template <class T>
struct message_type_tag {
  using type = T;
};

/// Calls `visit(message_type_tag<T>{}, name)` for each type. CAF's add_message_type registers
/// std::vector<T> along with T, so vectors appear here only when their element type does not.
template <class Visitor>
void for_each_message_type(Visitor&& visit) {
  // core
  visit(message_type_tag<message_ptr>{}, "warren::message_ptr");
  visit(message_type_tag<message_id>{}, "warren::message_id");
  visit(message_type_tag<field>{}, "warren::field");
  visit(message_type_tag<field_value>{}, "warren::field_value");
  visit(message_type_tag<exchange_spec>{}, "warren::exchange_spec");
  visit(message_type_tag<queue_spec>{}, "warren::queue_spec");
  visit(message_type_tag<binding_spec>{}, "warren::binding_spec");
  visit(message_type_tag<user_record>{}, "warren::user_record");
  visit(message_type_tag<permission_record>{}, "warren::permission_record");
  visit(message_type_tag<grant_record>{}, "warren::grant_record");
  visit(message_type_tag<vhost_limits>{}, "warren::vhost_limits");
  visit(message_type_tag<cluster_member>{}, "warren::cluster_member");
  visit(message_type_tag<vhost_definition>{}, "warren::vhost_definition");
  visit(message_type_tag<definitions>{}, "warren::definitions");
  visit(message_type_tag<traffic_counters>{}, "warren::traffic_counters");
  visit(message_type_tag<publish_outcome>{}, "warren::publish_outcome");
  visit(message_type_tag<settle_kind>{}, "warren::settle_kind");
  visit(message_type_tag<std::vector<uint64_t>>{}, "std::vector<@u64>");
  visit(message_type_tag<std::vector<uint32_t>>{}, "std::vector<@u32>");
  // actors
  visit(message_type_tag<publish_item>{}, "warren::publish_item");
  visit(message_type_tag<publish_batch>{}, "warren::publish_batch");
  visit(message_type_tag<consume_request>{}, "warren::consume_request");
  visit(message_type_tag<consumer_spec>{}, "warren::consumer_spec");
  visit(message_type_tag<stream_offset_spec>{}, "warren::stream_offset_spec");
  visit(message_type_tag<queued_delivery>{}, "warren::queued_delivery");
  visit(message_type_tag<group_info>{}, "warren::group_info");
  visit(message_type_tag<stream_command>{}, "warren::stream_command");
  visit(message_type_tag<stream_reply>{}, "warren::stream_reply");
  visit(message_type_tag<get_reply>{}, "warren::get_reply");
  visit(message_type_tag<lookup_reply>{}, "warren::lookup_reply");
  visit(message_type_tag<delivery>{}, "warren::delivery");
  visit(message_type_tag<route_target>{}, "warren::route_target");
  visit(message_type_tag<route_sets>{}, "warren::route_sets");
  visit(message_type_tag<exchange_info>{}, "warren::exchange_info");
  visit(message_type_tag<queue_info>{}, "warren::queue_info");
  visit(message_type_tag<std::vector<std::vector<queue_info>>>{},
        "std::vector<std::vector<warren::queue_info>>");
  visit(message_type_tag<binding_info>{}, "warren::binding_info");
  visit(message_type_tag<consumer_info>{}, "warren::consumer_info");
  visit(message_type_tag<std::vector<std::vector<consumer_info>>>{},
        "std::vector<std::vector<warren::consumer_info>>");
  visit(message_type_tag<connection_info>{}, "warren::connection_info");
  visit(message_type_tag<node_stats_info>{}, "warren::node_stats_info");
  visit(message_type_tag<connection_settings>{}, "warren::connection_settings");
  visit(message_type_tag<client_hello>{}, "warren::client_hello");
  visit(message_type_tag<queue_placement>{}, "warren::queue_placement");
  visit(message_type_tag<topology_change>{}, "warren::topology_change");
  visit(message_type_tag<access_change>{}, "warren::access_change");
  visit(message_type_tag<claim_reply>{}, "warren::claim_reply");
  visit(message_type_tag<vhost_topology>{}, "warren::vhost_topology");
  visit(message_type_tag<metadata_view>{}, "warren::metadata_view");
  visit(message_type_tag<join_request>{}, "warren::join_request");
  visit(message_type_tag<join_reply>{}, "warren::join_reply");
  visit(message_type_tag<node_info>{}, "warren::node_info");
  visit(message_type_tag<persistence::raft_frame>{}, "warren::persistence::raft_frame");
  // persistence
  visit(message_type_tag<persistence::meta_mutation>{}, "warren::persistence::meta_mutation");
}

/// Registers every type above with `cfg`.
void register_message_types(caf::actor_system_config& cfg);

}  // namespace warren
