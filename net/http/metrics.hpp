// metrics: the node's figures in Prometheus' text exposition format (version 0.0.4), under the
// names RabbitMQ's prometheus plugin gives them where it has one (rabbitmq_queue_messages_ready
// {vhost,queue} and so on), so dashboards built for RabbitMQ read Warren's; figures RabbitMQ
// has no name for are warren_*.
#pragma once

#include "actors/common/protocol.hpp"
#include "core/latency_histogram.hpp"

#include <string>

namespace warren::net::http {

/// The resource alarm as the door last heard it.
struct alarm_status {
  bool memory = false;
  bool disk = false;
};

/// The process's open file descriptors and their limit (from /proc/self and getrlimit).
struct fd_usage {
  uint64_t open = 0;
  uint64_t limit = 0;
};
fd_usage read_fd_usage();

std::string prometheus_text(const node_stats_info& stats, const alarm_status& alarms,
                            const fd_usage& fds, const latency_histogram::reading& confirm);

}  // namespace warren::net::http
