#include "apps/warrenctl_output.hpp"

#include <algorithm>
#include <ctime>
#include <iostream>

namespace warrenctl {

using namespace warren::client;
using nlohmann::json;

namespace {

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

}  // namespace

std::string dump_json(const json& j) {
  // Bodies and headers are bytes: invalid UTF-8 is replaced rather than aborting the output.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void print_table(const table& rows) {
  for (const auto& line : warren::text::format_table(rows)) std::cout << line << '\n';
}

std::string table_text(const field_table& t) {
  std::string out;
  for (const auto& f : t) {
    if (!out.empty()) out += ",";
    out += f.key + "=" + warren::to_string(f.value);
  }
  return out;
}

json to_json(const delivery& d) {
  json props = json::object();
  const auto& p = d.properties;
  props["persistent"] = p.persistent;
  if (!p.content_type.empty()) props["content_type"] = p.content_type;
  if (!p.content_encoding.empty()) props["content_encoding"] = p.content_encoding;
  if (p.priority != 0) props["priority"] = p.priority;
  if (!p.correlation_id.empty()) props["correlation_id"] = p.correlation_id;
  if (!p.reply_to.empty()) props["reply_to"] = p.reply_to;
  if (!p.expiration.empty()) props["expiration"] = p.expiration;
  if (!p.message_id.empty()) props["app_message_id"] = p.message_id;
  if (p.timestamp != 0) props["timestamp"] = p.timestamp;
  if (!p.type.empty()) props["type"] = p.type;
  if (!p.user_id.empty()) props["user_id"] = p.user_id;
  if (!p.app_id.empty()) props["app_id"] = p.app_id;
  return json{{"body", d.body},
              {"exchange", d.exchange},
              {"routing_key", d.routing_key},
              {"redelivered", d.redelivered},
              {"message_id", warren::to_string(d.id)},
              {"delivery_tag", d.delivery_tag},
              {"stream_offset", d.stream_offset},
              {"headers", to_json(p.headers)},
              {"properties", props}};
}

void print_list(const std::vector<std::string>& vhosts, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& v : vhosts) out.push_back(json{{"name", v}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"name"}};
  for (const auto& v : vhosts) rows.push_back({v});
  print_table(rows);
}

void print_list(const std::vector<exchange_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& e : list)
      out.push_back(json{{"name", e.name},
                         {"vhost", e.vhost},
                         {"type", e.type},
                         {"durable", e.durable},
                         {"auto_delete", e.auto_delete},
                         {"internal", e.internal},
                         {"arguments", to_json(e.arguments)}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"name", "type", "durable", "auto_delete", "internal", "arguments"}};
  for (const auto& e : list)
    rows.push_back({e.name.empty() ? "(default)" : e.name, e.type, yes_no(e.durable),
                    yes_no(e.auto_delete), yes_no(e.internal), table_text(e.arguments)});
  print_table(rows);
}

void print_list(const std::vector<queue_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& q : list)
      out.push_back(json{{"name", q.name},
                         {"vhost", q.vhost},
                         {"durable", q.durable},
                         {"exclusive", q.exclusive},
                         {"auto_delete", q.auto_delete},
                         {"arguments", to_json(q.arguments)},
                         {"messages_ready", q.messages_ready},
                         {"messages_unacked", q.messages_unacked},
                         {"consumers", q.consumers},
                         {"messages_paged_out", q.messages_paged_out},
                         {"memory", q.memory},
                         {"type", q.type},
                         {"first_offset", q.first_offset},
                         {"last_offset", q.last_offset},
                         {"segments", q.segments},
                         {"state", q.unavailable.empty() ? "running" : "unavailable"},
                         {"unavailable", q.unavailable},
                         {"node", q.node}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"name", "type", "durable", "exclusive", "auto_delete", "ready", "unacked",
              "consumers", "offsets", "segments", "state", "node", "arguments"}};
  for (const auto& q : list) {
    auto offsets = q.first_offset < 0
                       ? std::string()
                       : std::to_string(q.first_offset) + ".." + std::to_string(q.last_offset);
    rows.push_back({q.name, q.type, yes_no(q.durable), yes_no(q.exclusive), yes_no(q.auto_delete),
                    std::to_string(q.messages_ready), std::to_string(q.messages_unacked),
                    std::to_string(q.consumers), offsets, std::to_string(q.segments),
                    q.unavailable.empty() ? "running" : "unavailable", q.node,
                    table_text(q.arguments)});
  }
  print_table(rows);
  // The reason is long: it goes under the table, one line per queue that has one.
  for (const auto& q : list)
    if (!q.unavailable.empty())
      std::cout << "queue " << q.name << " (vhost " << q.vhost
                << ") is unavailable: " << q.unavailable << '\n';
}

void print_list(const std::vector<binding_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& b : list)
      out.push_back(json{{"vhost", b.vhost},
                         {"exchange", b.exchange},
                         {"queue", b.queue},
                         {"destination_type", b.to_exchange ? "exchange" : "queue"},
                         {"key", b.key},
                         {"arguments", to_json(b.arguments)}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"exchange", "destination", "key", "arguments"}};
  for (const auto& b : list)
    rows.push_back({b.exchange.empty() ? "(default)" : b.exchange,
                    b.to_exchange ? "exchange " + b.queue : b.queue, b.key,
                    table_text(b.arguments)});
  print_table(rows);
}

void print_list(const std::vector<consumer_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& c : list)
      out.push_back(json{{"vhost", c.vhost},
                         {"queue", c.queue},
                         {"consumer_tag", c.consumer_tag},
                         {"channel", c.channel},
                         {"connection", c.connection},
                         {"no_ack", c.no_ack},
                         {"exclusive", c.exclusive},
                         {"prefetch", c.prefetch},
                         {"unacked", c.unacked}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"queue", "consumer_tag", "channel", "connection", "no_ack", "exclusive", "prefetch",
              "unacked"}};
  for (const auto& c : list)
    rows.push_back({c.queue, c.consumer_tag, std::to_string(c.channel), c.connection,
                    yes_no(c.no_ack), yes_no(c.exclusive), std::to_string(c.prefetch),
                    std::to_string(c.unacked)});
  print_table(rows);
}

void print_list(const std::vector<connection_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& c : list)
      out.push_back(json{{"name", c.name},
                         {"peer", c.peer},
                         {"vhost", c.vhost},
                         {"user", c.user},
                         {"channels", c.channels}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"name", "peer", "vhost", "user", "channels"}};
  for (const auto& c : list)
    rows.push_back({c.name, c.peer, c.vhost, c.user, std::to_string(c.channels)});
  print_table(rows);
}

namespace {

// The node's part in the metadata log: leader, voter, joining (a log, no vote yet), or "-".
std::string metadata_role(const node_row& n) {
  if (n.leader) return "leader";
  if (n.voter) return "voter";
  return n.metadata_log ? "joining" : "-";
}

}  // namespace

void print_list(const std::vector<node_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& n : list) {
      out.push_back(json{{"name", n.name},
                         {"address", n.address},
                         {"running", n.running},
                         {"local", n.local},
                         {"queues", n.queues},
                         {"metadata_log", n.metadata_log},
                         {"voter", n.voter},
                         {"leader", n.leader}});
      if (n.local && n.metadata_log) out.back()["metadata_log_applied"] = n.metadata_log_applied;
    }
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"name", "address", "running", "queues", "metadata"}};
  for (const auto& n : list)
    rows.push_back({n.name + (n.local ? " (this node)" : ""), n.address, yes_no(n.running),
                    std::to_string(n.queues), metadata_role(n)});
  print_table(rows);
}

}  // namespace warrenctl

namespace warrenctl {

void print_list(const std::vector<group_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& g : list)
      out.push_back(json{{"group", g.group},
                         {"committed_offset", g.committed_offset},
                         {"lag", g.lag},
                         {"consumers", g.consumers}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"group", "committed_offset", "lag", "consumers"}};
  for (const auto& g : list)
    rows.push_back({g.group, std::to_string(g.committed_offset), std::to_string(g.lag),
                    std::to_string(g.consumers)});
  print_table(rows);
}

namespace {

// Milliseconds since the epoch as ISO 8601 UTC, to the second.
std::string iso_time(int64_t ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

void print_list(const std::vector<grant_row>& list, bool as_json) {
  if (as_json) {
    json out = json::array();
    for (const auto& g : list)
      out.push_back(
          json{{"token_prefix", g.token_prefix},
               {"kind", g.kind},
               {"vhost", g.vhost},
               {"user", g.user},
               {"target", g.target},
               {"routing_key_pattern", g.routing_key_pattern},
               {"created_at", iso_time(g.created_at_ms)},
               {"expires_at", g.expires_at_ms == 0 ? json() : json(iso_time(g.expires_at_ms))}});
    std::cout << dump_json(out) << '\n';
    return;
  }
  table rows{{"token_prefix", "kind", "vhost", "target", "key_pattern", "user", "expires_at"}};
  for (const auto& g : list)
    rows.push_back({g.token_prefix, g.kind, g.vhost, g.target, g.routing_key_pattern, g.user,
                    g.expires_at_ms == 0 ? "never" : iso_time(g.expires_at_ms)});
  print_table(rows);
}

}  // namespace warrenctl
