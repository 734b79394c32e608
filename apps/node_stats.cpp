#include "apps/node_stats.hpp"

#include "actors/common/protocol.hpp"
#include "apps/text_table.hpp"
#include "core/log.hpp"

#include <caf/scoped_actor.hpp>

namespace warren {

namespace {

std::string per_second(double n) {
  return text::compact(n) + "/s";
}

// Streams' consumer groups: how far behind the end each is.
void log_groups(const node_stats_info& now) {
  text::table rows{{"vhost", "stream", "group", "committed", "lag", "consumers"}};
  for (const auto& q : now.queues)
    for (const auto& g : q.groups)
      rows.push_back({q.vhost, q.spec.name, g.group, std::to_string(g.committed),
                      std::to_string(g.lag), std::to_string(g.consumers)});
  if (rows.size() == 1) return;
  for (const auto& line : text::format_table(rows)) log(log_level::info, "stats", "  " + line);
}

// The table of one interval: every queue that holds messages, has consumers or had traffic.
void log_interval(const node_stats_info& now, const node_stats_info* before) {
  double seconds = before ? (now.uptime_ms - before->uptime_ms) / 1000.0 : 0;
  auto key = [](const queue_info& q) { return q.vhost + '\0' + q.spec.name; };
  auto rates =
      rates_by_key(before ? before->queues : std::vector<queue_info>{}, now.queues, seconds, key);
  text::table rows{{"vhost", "queue", "ready", "unacked", "consumers", "enqueued", "delivered",
                    "acked", "redelivered", "on disk"}};
  uint64_t ready = 0, unacked = 0;
  traffic_rates total;
  for (size_t n = 0; n < now.queues.size(); ++n) {
    const auto& q = now.queues[n];
    const auto& r = rates[n];
    ready += q.ready;
    unacked += q.unacked;
    total += r;
    bool active = r.published > 0 || r.delivered > 0 || r.acked > 0;
    if (q.ready == 0 && q.unacked == 0 && q.consumers == 0 && !active) continue;
    rows.push_back({q.vhost, q.spec.name, std::to_string(q.ready), std::to_string(q.unacked),
                    std::to_string(q.consumers), per_second(r.published), per_second(r.delivered),
                    per_second(r.acked), per_second(r.redelivered),
                    text::bytes(static_cast<double>(q.bytes_on_disk))});
  }
  log(log_level::info, "stats",
      std::to_string(now.queues.size()) + " queues, " + std::to_string(now.connections.size()) +
          " connections, " + std::to_string(ready) + " ready, " + std::to_string(unacked) +
          " unacked; enqueued " + per_second(total.published) + ", delivered " +
          per_second(total.delivered) + ", acked " + per_second(total.acked) + "; " +
          text::bytes(static_cast<double>(now.rss_bytes)) + " resident, " +
          text::bytes(static_cast<double>(now.memory_bytes)) + " held for messages");
  if (rows.size() > 1)
    for (const auto& line : text::format_table(rows)) log(log_level::info, "stats", "  " + line);
  log_groups(now);
}

}  // namespace

node_stats::node_stats(caf::actor_system& system, caf::actor node, unsigned interval_seconds)
    : system_(system), node_(std::move(node)), interval_(interval_seconds) {
  if (interval_ > 0) thread_ = std::thread([this] { run(); });
}

node_stats::~node_stats() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void node_stats::run() {
  std::optional<node_stats_info> previous;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stop_; })) {
    lock.unlock();
    caf::scoped_actor self{system_};
    self->request(node_, std::chrono::seconds(interval_), stats_atom::value)
        .receive(
            [&](node_stats_info& now) {
              log_interval(now, previous ? &*previous : nullptr);
              previous = std::move(now);
            },
            [](caf::error& err) {
              log(log_level::warn, "stats", "could not collect statistics: " + caf::to_string(err));
            });
    lock.lock();
  }
}

}  // namespace warren
