// warren-node's flags, grouped by topic, and the check of the cluster flags as a whole.
#include "apps/node_options.hpp"

#include <CLI/CLI.hpp>

namespace warren::node {

namespace {

// Where messages are stored and how safely.
void add_storage_options(CLI::App& app, node_options& opt) {
  app.add_option("--data-dir", opt.data_dir, "where metadata and messages are stored")
      ->capture_default_str();
  app.add_option("--fsync", opt.fsync,
                 "batch: confirm after a group fdatasync; always: fdatasync each message; "
                 "never: page cache only (confirms do not promise crash safety)")
      ->check(CLI::IsMember({"batch", "always", "never"}))
      ->capture_default_str();
  auto* check = app.add_flag("--check", opt.check,
                             "check the data dir and exit, starting nothing: every metadata "
                             "record and queue file is read, and each problem printed with what "
                             "it costs (exit 0 sound, 1 damage found, 2 not checked: the dir is "
                             "in use by a running node or is no data dir)");
  app.add_flag("--repair", opt.repair,
               "with --check: move damaged queue files aside into DATA_DIR/damaged/ (never "
               "deleting; damaged metadata needs a backup)")
      ->needs(check);
}

// The listeners in the clear: the address they share and one port each.
void add_port_options(CLI::App& app, node_options& opt) {
  app.add_option("--bind", opt.bind, "address to listen on")->capture_default_str();
  app.add_option("--port", opt.port, "Cap'n Proto RPC port (0 picks a free one)")
      ->capture_default_str();
  app.add_option("--amqp-port", opt.amqp_port, "AMQP 0-9-1 port (0 turns the listener off)")
      ->capture_default_str();
  app.add_option("--http-port", opt.http_port,
                 "management HTTP port: RabbitMQ's management API, /metrics and the web page "
                 "(0 turns it off)")
      ->capture_default_str();
  app.add_option("--metrics-port", opt.metrics_port,
                 "Prometheus /metrics without a login, as RabbitMQ's 15692 (0 turns it off)")
      ->capture_default_str();
}

// The TLS listeners, which only the certificate turns on.
void add_tls_options(CLI::App& app, node_options& opt) {
  auto* cert = app.add_option("--tls-cert", opt.tls.cert,
                              "PEM certificate (chain, leaf first): turns on the TLS listeners");
  app.add_option("--tls-key", opt.tls.key, "PEM private key of --tls-cert")->needs(cert);
  app.add_option("--tls-ca", opt.tls.ca,
                 "PEM CA certificates: TLS clients must present a certificate signed by one")
      ->needs(cert);
  app.add_option("--amqps-port", opt.amqps_port, "AMQP over TLS port (0 turns it off)")
      ->needs(cert)
      ->capture_default_str();
  app.add_option("--tls-port", opt.tls_port, "Cap'n Proto over TLS port (0 turns it off)")
      ->needs(cert)
      ->capture_default_str();
}

// How much memory messages may take before publishers wait or queues page out.
void add_memory_options(CLI::App& app, node_options& opt) {
  app.add_option("--memory-high-watermark", opt.memory_high_watermark,
                 "hold back publishers while the memory the node counts for messages is above "
                 "this fraction of RAM (at most 1), or this many bytes (above 1)")
      ->check(CLI::Range(0.0, 1e15))
      ->capture_default_str();
  app.add_option("--queue-memory-budget", opt.queue_memory_budget,
                 "bytes of messages all queues together keep in memory before new ones are kept "
                 "on disk only (0 = no node-wide budget)")
      ->capture_default_str();
  app.add_option("--queue-memory-per-queue", opt.queue_memory_per_queue,
                 "bytes of messages one queue keeps in memory before new ones are kept on disk "
                 "only (0 = no per-queue budget)")
      ->capture_default_str();
}

// How often a stream's consumer groups store how far they got.
void add_stream_options(CLI::App& app, node_options& opt) {
  app.add_option("--stream-commit-acks", opt.stream_commit_acks,
                 "a stream's consumer group commits what it is done with after this many acks")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--stream-commit-interval", opt.stream_commit_interval,
                 "and at least this often (seconds) while its consumers ack")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
}

// The process itself: its log and the CAF scheduler.
void add_runtime_options(CLI::App& app, node_options& opt) {
  app.add_option("--log-level", opt.log_level, "error|warn|info|debug")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}))
      ->capture_default_str();
  app.add_option("--scheduler", opt.scheduler,
                 "CAF scheduler policy: sharing (one shared job queue; best on few cores) or "
                 "stealing (work stealing)")
      ->check(CLI::IsMember({"sharing", "stealing"}))
      ->capture_default_str();
  app.add_option("--workers", opt.workers, "CAF worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

// What one connection, channel or message may take.
void add_limit_options(CLI::App& app, node_options& opt) {
  app.add_option("--consumer-timeout", opt.settings.consumer_timeout_ms,
                 "close a channel with 406 when one of its deliveries stays unacked this many "
                 "milliseconds (0 = never)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--max-message-size", opt.settings.max_message_bytes,
                 "largest message body accepted, in bytes (both doors)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{512} << 20))
      ->capture_default_str();
  app.add_option("--max-connections", opt.settings.max_connections,
                 "connections the node takes at once (0 = no limit)")
      ->capture_default_str();
  app.add_option("--channel-max", opt.settings.channel_max,
                 "channels one connection may have open at once")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--handshake-timeout", opt.limits.handshake_timeout_ms,
                 "close a connection that has not logged in within MS milliseconds (0 = never)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
}

// Joining a cluster: the shared secret, the cluster port and its TLS, the nodes to join.
void add_cluster_options(CLI::App& app, node_options& opt) {
  auto& link = opt.link;
  app.add_option("--cluster-secret", link.secret,
                 "shared by the nodes of a cluster; without it the node runs "
                 "standalone (also from WARREN_CLUSTER_SECRET; prefer that or "
                 "--cluster-secret-file: ps shows command lines)")
      ->envname("WARREN_CLUSTER_SECRET");
  app.add_option("--cluster-secret-file", link.secret_file,
                 "file holding the cluster secret (its content, without the final newline; "
                 "readable by its owner only)");
  app.add_option("--cluster-port", opt.cluster_port,
                 "node-to-node port, on --cluster-bind (0 = standalone)")
      ->capture_default_str();
  app.add_option("--cluster-bind", link.bind,
                 "address the cluster port listens on; anything but loopback needs cluster TLS")
      ->capture_default_str();
  app.add_option("--cluster-tls-cert", link.tls_cert,
                 "PEM certificate (chain, leaf first) this node proves itself with to its peers");
  app.add_option("--cluster-tls-key", link.tls_key, "PEM private key of --cluster-tls-cert");
  app.add_option("--cluster-tls-ca", link.tls_ca,
                 "PEM CA certificates: peers must present a certificate one of them signed");
  auto* join =
      app.add_option("--join", opt.join, "HOST:PORT of cluster nodes to join, comma-separated")
          ->delimiter(',');
  app.add_flag("--reset-local-data", opt.reset_local_data,
               "joining a cluster for the first time with data of its own: move the data dir "
               "aside (to DATA_DIR.before-join-TIME) and join with an empty one")
      ->needs(join);
  app.add_option("--node-name", opt.node_name,
                 "this node's name in the cluster (default warren@HOSTNAME:CLUSTER_PORT)");
}

}  // namespace

// --help lists the flags in the order they are added here, which is why a few stand alone
// between the groups.
int parse_options(int argc, char** argv, node_options& opt) {
  CLI::App app{"warren-node: the Warren message broker"};
  add_storage_options(app, opt);
  add_port_options(app, opt);
  add_tls_options(app, opt);
  app.add_option("--heartbeat", opt.heartbeat,
                 "AMQP heartbeat interval offered to clients, in seconds (0 = none)")
      ->capture_default_str();
  add_memory_options(app, opt);
  add_stream_options(app, opt);
  app.add_option("--disk-free-limit", opt.disk_free_limit,
                 "hold back AMQP publishers while the data dir's disk has less free bytes")
      ->capture_default_str();
  add_runtime_options(app, opt);
  app.add_option("--segment-bytes", opt.segment_bytes,
                 "size at which a queue's segment file is rolled over")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 32))
      ->capture_default_str();
  add_limit_options(app, opt);
  app.add_option("--stats-interval", opt.stats_interval,
                 "log a table of active queues every SECS seconds (0 = off)")
      ->capture_default_str();
  add_cluster_options(app, opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints the help or the mistake
    return code == 0 ? 0 : 2;
  }
  return -1;
}

std::string settle_cluster(node_options& opt) {
  auto& link = opt.link;
  bool any_tls = !link.tls_cert.empty() || !link.tls_key.empty() || !link.tls_ca.empty();
  if (link.secret.empty() && link.secret_file.empty()) {
    if (!opt.join.empty())
      return "--join needs the cluster secret (--cluster-secret-file, WARREN_CLUSTER_SECRET or "
             "--cluster-secret)";
    if (any_tls)
      return "the --cluster-tls-* flags need a cluster secret; without one the node "
             "runs standalone";
    return {};
  }
  return warren::node::settle_cluster_link(link, opt.join);
}

}  // namespace warren::node
