#include "net/http/metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <cstdio>
#include <functional>
#include <sstream>

namespace warren::net::http {

namespace {

std::string label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class writer {
 public:
  /// A metric family: its HELP and TYPE lines, then one sample per row from `each`.
  template <class Rows, class Labels, class Value>
  void family(const char* name, const char* type, const char* help, const Rows& rows, Labels labels,
              Value value) {
    head(name, type, help);
    for (const auto& r : rows)
      out_ << name << '{' << labels(r) << "} " << number(static_cast<double>(value(r))) << '\n';
  }
  void single(const char* name, const char* type, const char* help, double value) {
    head(name, type, help);
    out_ << name << ' ' << number(value) << '\n';
  }
  void histogram(const char* name, const char* help, const latency_histogram::reading& r) {
    head(name, "histogram", help);
    for (size_t i = 0; i < latency_histogram::bounds.size(); ++i)
      out_ << name << "_bucket{le=\"" << number(latency_histogram::bounds[i]) << "\"} "
           << r.cumulative[i] << '\n';
    out_ << name << "_bucket{le=\"+Inf\"} " << r.count << '\n';
    out_ << name << "_sum " << number(r.sum_seconds) << '\n';
    out_ << name << "_count " << r.count << '\n';
  }
  std::string text() const { return out_.str(); }

 private:
  void head(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
  }
  std::ostringstream out_;
};

std::string queue_labels(const queue_info& q) {
  return "vhost=\"" + label(q.vhost) + "\",queue=\"" + label(q.spec.name) + "\"";
}

std::string connection_labels(const connection_info& c) {
  return "vhost=\"" + label(c.vhost) + "\",connection=\"" + label(c.name) + "\",user=\"" +
         label(c.user) + "\"";
}

void queue_families(writer& w, const std::vector<queue_info>& qs) {
  auto l = queue_labels;
  using Q = const queue_info&;
  w.family("rabbitmq_queue_messages_ready", "gauge", "Messages ready to be delivered", qs, l,
           [](Q q) { return q.ready; });
  w.family("rabbitmq_queue_messages_unacked", "gauge", "Messages delivered and not yet acked", qs,
           l, [](Q q) { return q.unacked; });
  w.family("rabbitmq_queue_messages", "gauge", "Messages ready and unacked", qs, l,
           [](Q q) { return q.ready + q.unacked; });
  w.family("rabbitmq_queue_messages_paged_out", "gauge", "Ready messages kept on disk only", qs, l,
           [](Q q) { return q.paged_out; });
  w.family("rabbitmq_queue_consumers", "gauge", "Consumers on the queue", qs, l,
           [](Q q) { return q.consumers; });
  w.family("rabbitmq_queue_process_memory_bytes", "gauge", "Memory the queue holds", qs, l,
           [](Q q) { return q.memory_bytes; });
  w.family("rabbitmq_queue_disk_bytes", "gauge", "Bytes of the queue's segment files", qs, l,
           [](Q q) { return q.bytes_on_disk; });
  w.family("rabbitmq_queue_messages_published_total", "counter", "Messages enqueued", qs, l,
           [](Q q) { return q.traffic.published; });
  w.family("rabbitmq_queue_messages_delivered_total", "counter", "Messages delivered or got", qs, l,
           [](Q q) { return q.traffic.delivered; });
  w.family("rabbitmq_queue_messages_acked_total", "counter", "Deliveries acked", qs, l,
           [](Q q) { return q.traffic.acked; });
  w.family("rabbitmq_queue_messages_redelivered_total", "counter", "Deliveries redelivered", qs, l,
           [](Q q) { return q.traffic.redelivered; });
  w.family("rabbitmq_queue_messages_bytes_total", "counter", "Body bytes enqueued", qs, l,
           [](Q q) { return q.traffic.bytes_in; });
}

void connection_families(writer& w, const std::vector<connection_info>& cs) {
  auto l = connection_labels;
  using C = const connection_info&;
  w.family("rabbitmq_connection_channels", "gauge", "Channels open on the connection", cs, l,
           [](C c) { return c.channels; });
  w.family("rabbitmq_connection_messages_published_total", "counter",
           "Messages published on the connection", cs, l, [](C c) { return c.traffic.published; });
  w.family("rabbitmq_connection_messages_delivered_total", "counter",
           "Messages delivered on the connection", cs, l, [](C c) { return c.traffic.delivered; });
  w.family("rabbitmq_connection_incoming_bytes_total", "counter", "Body bytes published", cs, l,
           [](C c) { return c.traffic.bytes_in; });
  w.family("rabbitmq_connection_outgoing_bytes_total", "counter", "Body bytes delivered", cs, l,
           [](C c) { return c.traffic.bytes_out; });
}

}  // namespace

fd_usage read_fd_usage() {
  fd_usage out;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (auto* e = readdir(d))
      if (e->d_name[0] != '.') ++out.open;
    closedir(d);
    if (out.open > 0) --out.open;  // the directory stream itself
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) out.limit = lim.rlim_cur;
  return out;
}

std::string prometheus_text(const node_stats_info& stats, const alarm_status& alarms,
                            const fd_usage& fds, const latency_histogram::reading& confirm) {
  writer w;
  w.single("rabbitmq_queues", "gauge", "Queues", static_cast<double>(stats.queues.size()));
  w.single("rabbitmq_connections", "gauge", "Client connections open",
           static_cast<double>(stats.connections.size()));
  queue_families(w, stats.queues);
  connection_families(w, stats.connections);
  w.single("rabbitmq_process_resident_memory_bytes", "gauge", "Resident memory of the node",
           static_cast<double>(stats.rss_bytes));
  w.single("warren_message_memory_bytes", "gauge",
           "Memory counted for messages (what the memory alarm judges)",
           static_cast<double>(stats.memory_bytes));
  w.single("rabbitmq_process_open_fds", "gauge", "Open file descriptors",
           static_cast<double>(fds.open));
  w.single("rabbitmq_process_max_fds", "gauge", "Limit of open file descriptors",
           static_cast<double>(fds.limit));
  w.single("rabbitmq_alarms_memory_used_watermark", "gauge",
           "1 while the memory alarm holds publishers back", alarms.memory ? 1 : 0);
  w.single("rabbitmq_alarms_free_disk_space_watermark", "gauge",
           "1 while the disk alarm holds publishers back", alarms.disk ? 1 : 0);
  w.single("warren_uptime_seconds", "gauge", "Seconds since the node started",
           static_cast<double>(stats.uptime_ms) / 1000.0);
  w.histogram("warren_publish_confirm_latency_seconds",
              "From a publish reaching its connection to its confirm, per message", confirm);
  return w.text();
}

}  // namespace warren::net::http
