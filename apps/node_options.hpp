// warren-node's command line: every flag with its default and help text, read into one
// node_options, and the cluster flags checked together. Its own file because the flags are the
// node's outside contract (scripts and tests use them), apart from how the node starts.
#pragma once

#include "actors/common/protocol.hpp"
#include "apps/cluster_link.hpp"
#include "net/listener_thread.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace warren::node {

/// What the node runs with; the defaults here are the ones --help shows.
struct node_options {
  std::string data_dir = "./warren-data";
  std::string fsync = "batch";
  std::string bind = "127.0.0.1";
  uint16_t port = 5680;
  uint16_t amqp_port = 5672;
  uint16_t http_port = 15680;
  uint16_t metrics_port = 15692;
  warren::transport::tls_files tls;  // TLS listeners run when tls.cert is given
  uint16_t amqps_port = 5671;
  uint16_t tls_port = 5681;
  uint16_t heartbeat = 60;
  warren::net::door_limits limits;
  double memory_high_watermark = 0.4;
  uint64_t queue_memory_budget = 256 << 20;
  uint64_t queue_memory_per_queue = 64 << 20;
  uint64_t stream_commit_acks = 1000;
  double stream_commit_interval = 5;
  uint64_t disk_free_limit = 50'000'000;
  std::string log_level = "info";
  std::string scheduler = "sharing";
  size_t workers = 2;
  unsigned stats_interval = 0;
  uint64_t segment_bytes = 8 << 20;
  warren::connection_settings settings;
  uint16_t cluster_port = 25680;
  std::vector<std::string> join;
  bool reset_local_data = false;
  std::string node_name;  // default warren@HOSTNAME:CLUSTER_PORT
  warren::node::cluster_link_options link;
  bool check = false;   // check the data dir and exit, starting nothing (apps/data_check.hpp)
  bool repair = false;  // with check: move damaged queue files aside
};

/// Reads the command line into `opt`; -1 to go on, else the exit code (0 after --help).
int parse_options(int argc, char** argv, node_options& opt);

/// The cluster settings, checked together before anything starts; "" when they are fine.
std::string settle_cluster(node_options& opt);

}  // namespace warren::node
