#include "net/http/api_json.hpp"

#include "core/definitions_json.hpp"

#include <kj/encoding.h>

namespace warren::net::http {

using json = nlohmann::json;

namespace {

json counter(uint64_t count, double rate) {
  return json{{"rate", rate}, {"count", count}};
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

std::string base64(const std::string& s) {
  auto bytes = kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
  return std::string(kj::encodeBase64(bytes).cStr());
}

// The properties the message carries, as RabbitMQ's management API lists them: those its
// publisher set, and no others.
json properties_json(const message& m) {
  namespace f = property_flag;
  const auto& p = m.properties();
  auto present = present_properties(p);
  json out = json::object();
  if (present & f::delivery_mode) out["delivery_mode"] = p.persistent ? 2 : 1;
  if (present & f::headers) out["headers"] = to_json(p.headers);
  for (const auto& t : text_properties)
    if (present & t.flag) out[t.name] = p.*t.field;
  if (present & f::priority) out["priority"] = p.priority;
  if (present & f::timestamp) out["timestamp"] = p.timestamp;
  return out;
}

}  // namespace

json message_stats(const traffic_counters& c, const traffic_rates& r) {
  return {{"publish", c.published},
          {"publish_details", counter(c.published, r.published)},
          {"deliver_get", c.delivered},
          {"deliver_get_details", counter(c.delivered, r.delivered)},
          {"ack", c.acked},
          {"ack_details", counter(c.acked, r.acked)},
          {"redeliver", c.redelivered},
          {"redeliver_details", counter(c.redelivered, r.redelivered)}};
}

json queue_json(const queue_info& q, const traffic_rates& rates) {
  json out = {{"name", q.spec.name},
              {"vhost", q.vhost},
              {"durable", q.spec.durable},
              {"auto_delete", q.spec.auto_delete},
              {"exclusive", q.spec.exclusive},
              {"arguments", to_json(q.spec.arguments)},
              {"node", q.node},
              {"type", q.stream ? "stream" : "classic"},
              {"state", q.unavailable.empty() ? "running" : "down"},
              {"messages", q.ready + q.unacked},
              {"messages_ready", q.ready},
              {"messages_unacknowledged", q.unacked},
              {"messages_paged_out", q.paged_out},
              {"consumers", q.consumers},
              {"memory", q.memory_bytes},
              {"message_bytes_persistent", q.bytes_on_disk},
              {"segments", q.segments},
              {"message_stats", message_stats(q.traffic, rates)}};
  if (!q.unavailable.empty()) out["reason"] = q.unavailable;
  if (q.stream) {
    out["first_offset"] = q.first_offset;
    out["last_offset"] = q.last_offset;
    json groups = json::array();
    for (const auto& g : q.groups)
      groups.push_back({{"group", g.group},
                        {"committed_offset", g.committed},
                        {"lag", g.lag},
                        {"consumers", g.consumers}});
    out["groups"] = groups;
  }
  return out;
}

json exchange_json(const exchange_info& e) {
  return {{"name", e.spec.name},
          {"vhost", e.vhost},
          {"type", to_string(e.spec.type)},
          {"durable", e.spec.durable},
          {"auto_delete", e.spec.auto_delete},
          {"internal", e.spec.internal},
          {"arguments", to_json(e.spec.arguments)}};
}

json binding_json(const binding_info& b) {
  // RabbitMQ's properties key: the routing key (escaped) when there are no arguments.
  auto key = b.spec.key.empty() ? std::string("~") : b.spec.key;
  return {{"source", b.spec.exchange},
          {"vhost", b.vhost},
          {"destination", b.spec.destination},
          {"destination_type", b.spec.to_exchange ? "exchange" : "queue"},
          {"routing_key", b.spec.key},
          {"arguments", to_json(b.spec.arguments)},
          {"properties_key", key}};
}

json consumer_json(const consumer_info& c) {
  return {{"consumer_tag", c.tag},
          {"queue", {{"name", c.queue}, {"vhost", c.vhost}}},
          {"channel_details",
           {{"connection_name", c.connection_name},
            {"number", c.channel},
            {"name", c.connection_name + " (" + std::to_string(c.channel) + ")"}}},
          {"ack_required", !c.no_ack},
          {"exclusive", c.exclusive},
          {"prefetch_count", c.prefetch},
          {"messages_unacknowledged", c.unacked},
          {"active", true},
          {"arguments", json::object()}};
}

json connection_json(const connection_info& c, const std::string& node) {
  auto colon = c.peer.rfind(':');
  json out = {{"name", c.name},
              {"vhost", c.vhost},
              {"user", c.user},
              {"node", node},
              {"channels", c.channels},
              {"state", "running"},
              {"peer_host", c.peer.substr(0, colon)},
              {"recv_oct", c.traffic.bytes_in},
              {"send_oct", c.traffic.bytes_out},
              {"message_stats", message_stats(c.traffic, {})}};
  if (colon != std::string::npos) out["peer_port"] = std::atoi(c.peer.c_str() + colon + 1);
  return out;
}

json node_json(const node_info& n, const node_stats_info& stats) {
  json out = {{"name", n.name},
              {"type", "disc"},
              {"running", n.running},
              {"address", n.address},
              {"queues", n.queues},
              {"metadata_log", n.has_log},
              {"metadata_voter", n.voter},
              {"metadata_leader", n.leader}};
  if (n.local) {
    out["metadata_log_applied"] = n.log_applied;
    out["mem_used"] = stats.rss_bytes;
    out["uptime"] = stats.uptime_ms;
  }
  return out;
}

json user_json(const user_record& u) {
  json out = {{"name", u.name}, {"tags", u.tags}, {"limits", json::object()}};
  // Listings carry no hashes (definitions do).
  if (!u.password_hash.empty()) {
    out["password_hash"] = u.password_hash;
    out["hashing_algorithm"] = "rabbit_password_hashing_sha256";
  }
  return out;
}

json permission_json(const permission_record& p) {
  return {{"user", p.user},
          {"vhost", p.vhost},
          {"configure", p.configure},
          {"write", p.write},
          {"read", p.read}};
}

json message_json(const delivery& d, uint32_t message_count, bool base64_always) {
  const auto& m = *d.msg;
  bool text = !base64_always && valid_utf8(m.body);
  json out = {{"payload_bytes", m.body.size()},
              {"redelivered", d.redelivered},
              {"exchange", m.exchange},
              {"routing_key", m.routing_key},
              {"message_count", message_count},
              {"properties", properties_json(m)},
              {"payload", text ? m.body : base64(m.body)},
              {"payload_encoding", text ? "string" : "base64"}};
  if (d.stream_offset >= 0) out["stream_offset"] = d.stream_offset;
  return out;
}

std::string exchange_from_path(const std::string& segment) {
  return segment == "amq.default" ? std::string() : segment;
}

}  // namespace warren::net::http
