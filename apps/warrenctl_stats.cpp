#include "apps/warrenctl_stats.hpp"

#include "apps/warrenctl_output.hpp"

#include <chrono>
#include <iostream>
#include <thread>

using namespace warren::client;
using nlohmann::json;
using warren::traffic_rates;

namespace warrenctl {

namespace {

std::string queue_key(const queue_row& q) {
  return q.vhost + '\0' + q.name;
}
std::string connection_key(const connection_row& c) {
  return c.name + '\0' + c.peer;
}

json rates_json(const traffic_rates& r) {
  return json{{"published_per_s", r.published}, {"delivered_per_s", r.delivered},
              {"acked_per_s", r.acked},         {"redelivered_per_s", r.redelivered},
              {"bytes_in_per_s", r.bytes_in},   {"bytes_out_per_s", r.bytes_out}};
}

json counters_json(const warren::traffic_counters& t) {
  return json{{"published", t.published}, {"delivered", t.delivered},
              {"acked", t.acked},         {"redelivered", t.redelivered},
              {"bytes_in", t.bytes_in},   {"bytes_out", t.bytes_out}};
}

traffic_rates sum(const std::vector<traffic_rates>& rows) {
  traffic_rates total;
  for (const auto& r : rows) total += r;
  return total;
}

std::string per_second(double n) {
  return warren::text::compact(n) + "/s";
}
std::string bytes_per_second(double n) {
  return warren::text::bytes(n) + "/s";
}

std::string duration(uint64_t ms) {
  auto s = ms / 1000;
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%luh%02lum", static_cast<unsigned long>(s / 3600),
                  static_cast<unsigned long>(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lum%02lus", static_cast<unsigned long>(s / 60),
                  static_cast<unsigned long>(s % 60));
  return buf;
}

// Streams' consumer groups and how far behind their end each is ("enqueued" above is a
// stream's append rate).
void print_groups(const node_stats& after) {
  table groups{{"vhost", "stream", "group", "committed", "lag", "consumers"}};
  for (const auto& q : after.queues)
    for (const auto& g : q.groups)
      groups.push_back({q.vhost, q.name, g.group, std::to_string(g.committed_offset),
                        std::to_string(g.lag), std::to_string(g.consumers)});
  if (groups.size() == 1) return;
  print_table(groups);
  std::cout << '\n';
}

// What two readings say together: the rates between them, and the node's totals at the second.
struct stats_interval {
  double seconds = 0;
  std::vector<traffic_rates> queue_rates;  // in the order of after.queues
  std::vector<traffic_rates> conn_rates;   // in the order of after.connections
  traffic_rates total;
  uint64_t ready = 0, unacked = 0, on_disk = 0;
};

stats_interval measure(const node_stats& before, const node_stats& after) {
  stats_interval out;
  out.seconds = (after.uptime_ms - before.uptime_ms) / 1000.0;
  out.queue_rates = warren::rates_by_key(before.queues, after.queues, out.seconds, queue_key);
  out.conn_rates =
      warren::rates_by_key(before.connections, after.connections, out.seconds, connection_key);
  out.total = sum(out.queue_rates);
  for (const auto& q : after.queues) {
    out.ready += q.messages_ready;
    out.unacked += q.messages_unacked;
    out.on_disk += q.bytes_on_disk;
  }
  return out;
}

json queue_json(const queue_row& q, const traffic_rates& rates) {
  json row{{"vhost", q.vhost},          {"name", q.name},
           {"ready", q.messages_ready}, {"unacked", q.messages_unacked},
           {"consumers", q.consumers},  {"bytes_on_disk", q.bytes_on_disk},
           {"segments", q.segments},    {"paged_out", q.messages_paged_out},
           {"memory", q.memory},        {"type", q.type}};
  if (q.type == "stream") {
    json groups = json::array();
    for (const auto& g : q.groups)
      groups.push_back(json{{"group", g.group},
                            {"committed_offset", g.committed_offset},
                            {"lag", g.lag},
                            {"consumers", g.consumers}});
    row["first_offset"] = q.first_offset;
    row["last_offset"] = q.last_offset;
    row["groups"] = std::move(groups);
  }
  row.update(counters_json(q.traffic));
  row.update(rates_json(rates));
  return row;
}

json connection_json(const connection_row& c, const traffic_rates& rates) {
  json row{{"name", c.name},
           {"peer", c.peer},
           {"vhost", c.vhost},
           {"user", c.user},
           {"channels", c.channels}};
  row.update(counters_json(c.traffic));
  row.update(rates_json(rates));
  return row;
}

void print_json(const node_stats& after, const stats_interval& span) {
  json queues = json::array(), conns = json::array();
  for (size_t i = 0; i < after.queues.size(); ++i)
    queues.push_back(queue_json(after.queues[i], span.queue_rates[i]));
  for (size_t i = 0; i < after.connections.size(); ++i)
    conns.push_back(connection_json(after.connections[i], span.conn_rates[i]));
  json totals{{"ready", span.ready}, {"unacked", span.unacked}, {"bytes_on_disk", span.on_disk}};
  totals.update(rates_json(span.total));
  std::cout << dump_json(json{{"interval_s", span.seconds},
                              {"uptime_ms", after.uptime_ms},
                              {"rss_bytes", after.rss_bytes},
                              {"memory_bytes", after.memory_bytes},
                              {"totals", totals},
                              {"queues", queues},
                              {"connections", conns}})
            << std::endl;
}

// The two lines on the node as a whole that open a text report.
void print_summary(const node_stats& after, const stats_interval& span) {
  const auto& total = span.total;
  std::cout << "node: up " << duration(after.uptime_ms) << ", "
            << warren::text::bytes(after.rss_bytes) << " resident, "
            << warren::text::bytes(after.memory_bytes) << " held for messages, "
            << after.queues.size() << " queue(s), " << after.connections.size()
            << " connection(s); rates over " << warren::text::compact(span.seconds) << " s\n"
            << "queues: enqueued " << per_second(total.published) << ", delivered "
            << per_second(total.delivered) << ", acked " << per_second(total.acked)
            << ", redelivered " << per_second(total.redelivered) << ", in "
            << bytes_per_second(total.bytes_in) << ", out " << bytes_per_second(total.bytes_out)
            << "; " << span.ready << " ready, " << span.unacked << " unacked, "
            << warren::text::bytes(span.on_disk) << " on disk\n\n";
}

void print_queues(const node_stats& after, const stats_interval& span) {
  table queues{{"vhost", "queue", "ready", "unacked", "consumers", "enqueued", "delivered", "acked",
                "redelivered", "in", "out", "on disk", "segments"}};
  for (size_t i = 0; i < after.queues.size(); ++i) {
    const auto& q = after.queues[i];
    const auto& r = span.queue_rates[i];
    queues.push_back({q.vhost, q.name, std::to_string(q.messages_ready),
                      std::to_string(q.messages_unacked), std::to_string(q.consumers),
                      per_second(r.published), per_second(r.delivered), per_second(r.acked),
                      per_second(r.redelivered), bytes_per_second(r.bytes_in),
                      bytes_per_second(r.bytes_out), warren::text::bytes(q.bytes_on_disk),
                      std::to_string(q.segments)});
  }
  print_table(queues);
  std::cout << '\n';
}

void print_connections(const node_stats& after, const stats_interval& span) {
  table conns{{"connection", "peer", "vhost", "user", "channels", "published", "delivered", "acked",
               "in", "out"}};
  for (size_t i = 0; i < after.connections.size(); ++i) {
    const auto& c = after.connections[i];
    const auto& r = span.conn_rates[i];
    conns.push_back({c.name, c.peer, c.vhost, c.user, std::to_string(c.channels),
                     per_second(r.published), per_second(r.delivered), per_second(r.acked),
                     bytes_per_second(r.bytes_in), bytes_per_second(r.bytes_out)});
  }
  print_table(conns);
}

void report(const node_stats& before, const node_stats& after, bool as_json) {
  auto span = measure(before, after);
  if (as_json) {
    print_json(after, span);
    return;
  }
  print_summary(after, span);
  print_queues(after, span);
  print_groups(after);
  print_connections(after, span);
  std::cout << std::flush;
}

}  // namespace

void run_stats(connection& conn, const stats_options& options) {
  auto before = conn.stats();
  auto pause = std::chrono::milliseconds(static_cast<int64_t>(options.interval_seconds * 1000));
  for (unsigned n = 1;; ++n) {
    std::this_thread::sleep_for(pause);
    auto after = conn.stats();
    if (options.watch && !options.json && n > 1) std::cout << "\n";
    report(before, after, options.json);
    if (!options.watch || (options.reports != 0 && n >= options.reports)) return;
    before = std::move(after);
  }
}

}  // namespace warrenctl
