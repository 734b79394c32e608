// api_json: the node's listings as RabbitMQ's management API writes them (same field names), so
// rabbitmqadmin, dashboards and scripts written for RabbitMQ read Warren's.
#pragma once

#include "actors/common/client_link.hpp"
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/protocol.hpp"
#include "core/traffic.hpp"

#include <nlohmann/json.hpp>

namespace warren::net::http {

/// {"publish": n, "publish_details": {"rate": r}, "deliver_get": ..., "ack": ..., "redeliver": ...}
nlohmann::json message_stats(const traffic_counters& c, const traffic_rates& r);

nlohmann::json queue_json(const queue_info& q, const traffic_rates& rates);
nlohmann::json exchange_json(const exchange_info& e);
nlohmann::json binding_json(const binding_info& b);
nlohmann::json consumer_json(const consumer_info& c);
nlohmann::json connection_json(const connection_info& c, const std::string& node);
nlohmann::json node_json(const node_info& n, const node_stats_info& stats);
nlohmann::json user_json(const user_record& u);
nlohmann::json permission_json(const permission_record& p);

/// A message handed out by get or peek: payload as text when it is valid UTF-8 (encoding
/// "auto") or always base64 ("base64").
nlohmann::json message_json(const delivery& d, uint32_t message_count, bool base64);

/// The exchange name in a path: RabbitMQ's API names the default exchange "amq.default".
std::string exchange_from_path(const std::string& segment);

}  // namespace warren::net::http
