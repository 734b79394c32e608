// warren-node: the broker process. Parses flags, starts the actor system and the Cap'n Proto
// listener, logs one "ready" line, and stops cleanly on SIGTERM / SIGINT.
#include "actors/cluster/cluster_actor.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/message_types.hpp"
#include "actors/common/protocol.hpp"
#include "actors/node/node_actor.hpp"
#include "actors/node/resource_alarm.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "apps/cluster_link.hpp"
#include "apps/local_data.hpp"
#include "apps/node_stats.hpp"
#include "core/log.hpp"
#include "net/amqp/amqp_server.hpp"
#include "net/capnp/rpc_server.hpp"
#include "net/http/management_server.hpp"
#include "persistence/data_dir.hpp"
#include "persistence/format1_upgrade.hpp"
#include "persistence/lmdb_store.hpp"

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <pthread.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <set>

namespace {

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
};

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

// Reads the command line into `opt`; -1 to go on, else the exit code (0 after --help).
int parse_options(int argc, char** argv, node_options& opt) {
  CLI::App app{"warren-node: the Warren message broker"};
  app.add_option("--data-dir", opt.data_dir, "where metadata and messages are stored")
      ->capture_default_str();
  app.add_option("--fsync", opt.fsync,
                 "batch: confirm after a group fdatasync; always: fdatasync each message; "
                 "never: page cache only (confirms do not promise crash safety)")
      ->check(CLI::IsMember({"batch", "always", "never"}))
      ->capture_default_str();
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
  app.add_option("--heartbeat", opt.heartbeat,
                 "AMQP heartbeat interval offered to clients, in seconds (0 = none)")
      ->capture_default_str();
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
  app.add_option("--stream-commit-acks", opt.stream_commit_acks,
                 "a stream's consumer group commits what it is done with after this many acks")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--stream-commit-interval", opt.stream_commit_interval,
                 "and at least this often (seconds) while its consumers ack")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--disk-free-limit", opt.disk_free_limit,
                 "hold back AMQP publishers while the data dir's disk has less free bytes")
      ->capture_default_str();
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
  app.add_option("--segment-bytes", opt.segment_bytes,
                 "size at which a queue's segment file is rolled over")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 32))
      ->capture_default_str();
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

struct opened_storage {
  std::unique_ptr<warren::persistence::data_dir> dir;  // holds the data dir's lock
  std::shared_ptr<warren::persistence::lmdb_store> metadata;
  warren::persistence::metadata_contents contents;
  warren::storage_context storage;
};

// Locks the data dir, opens (and if need be upgrades) its metadata, and sets up what queues need
// to reach their files. Throws std::runtime_error saying what stops the node from starting.
opened_storage open_storage(const node_options& opt) {
  namespace persistence = warren::persistence;
  opened_storage out;
  out.dir = std::make_unique<persistence::data_dir>(opt.data_dir);
  auto& dir = *out.dir;
  std::string refuse_fresh;
  if (auto n = dir.queue_folder_count())
    refuse_fresh = "no metadata in " + dir.meta_path() + " (missing or emptied), but " +
                   dir.path() + "/queues holds " + std::to_string(n) +
                   " queue folder(s): refusing to start as a new broker over their messages; "
                   "restore meta/ from a backup, or move queues/ aside to start afresh";
  out.metadata = std::make_shared<persistence::lmdb_store>(dir.meta_path(), refuse_fresh);
  out.contents = out.metadata->load();
  persistence::upgrade_data_dir(dir, *out.metadata, out.contents.queues);
  std::set<uint64_t> live;
  uint64_t max_id = 0;
  for (const auto& q : out.contents.queues) {
    live.insert(q.id);
    max_id = std::max(max_id, q.id);
  }
  auto orphans = dir.find_orphans(live);
  for (const auto& path : orphans.names)
    warren::log(warren::log_level::warn, "node",
                path + " belongs to no queue record; left as it is");
  auto& storage = out.storage;
  storage.data_dir = dir.path();
  persistence::parse_fsync_policy(opt.fsync, storage.fsync);
  storage.next_queue_id->store(std::max(max_id, orphans.max_id));
  storage.segments.segment_bytes = opt.segment_bytes;
  storage.node_memory_budget = opt.queue_memory_budget;
  storage.queue_memory_budget = opt.queue_memory_per_queue;
  storage.stream_commit_acks = opt.stream_commit_acks;
  storage.stream_commit_interval_ms = static_cast<int64_t>(opt.stream_commit_interval * 1000);
  // Messages non-durable queues paged out belong to the run that wrote them.
  persistence::remove_tree(storage.scratch_root());
  // Queue files are opened on demand through one bounded cache; sockets, LMDB and the event
  // loops keep the other half of the descriptors.
  auto fd_limit = persistence::raise_open_file_limit();
  storage.files =
      std::make_shared<persistence::file_cache>(std::clamp<size_t>(fd_limit / 2, 16, 4096));
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Spawns the cluster actor; when clustered (a secret and a cluster port), publishes it on the
// cluster port and waits until it joined the nodes --join names. Throws std::runtime_error
// naming what stopped it (the port, a node that refused us).
// The node's name in the cluster and in listings: --node-name, else warren@HOSTNAME:CLUSTER_PORT.
std::string node_name_of(const node_options& opt) {
  if (!opt.node_name.empty()) return opt.node_name;
  return "warren@" + host_name() + ":" + std::to_string(opt.cluster_port);
}

// A node that is told to join and has never been in a cluster: it takes the cluster's metadata
// instead of its own.
bool is_first_join(const node_options& opt, const std::vector<warren::cluster_member>& stored) {
  auto self = node_name_of(opt);
  return !opt.link.secret.empty() && opt.cluster_port != 0 && !opt.join.empty() &&
         std::none_of(stored.begin(), stored.end(), [&](const auto& m) { return m.name != self; });
}

// On a first join the node's own metadata would be replaced by the cluster's: a node that holds
// data of its own refuses, naming it, unless --reset-local-data moves the data dir aside (never
// deleting it) and starts over with an empty one. Throws std::runtime_error when it refuses.
void settle_first_join(const node_options& opt, opened_storage& opened) {
  if (!is_first_join(opt, opened.contents.members)) return;
  auto held = warren::node::describe_local_data(opened.contents, opt.data_dir);
  if (held.empty()) return;
  if (!opt.reset_local_data)
    throw std::runtime_error(
        "refusing to join: this node holds data of its own (" + held + ") in " + opt.data_dir +
        ", and a node joining a cluster for the first time takes the cluster's metadata in "
        "place of its own. Start it with --reset-local-data to move the data dir aside (kept, "
        "not deleted) and join with an empty one, or without --join to keep it standalone");
  opened = opened_storage{};  // closes LMDB and gives up the data dir's lock
  auto moved = warren::node::move_data_dir_aside(opt.data_dir);
  warren::log(warren::log_level::warn, "node",
              "--reset-local-data: moved " + held + " aside to " + moved);
  opened = open_storage(opt);
}

// Waits until the cluster actor joined the nodes --join names; what stopped it otherwise (a node
// refused us, or SIGTERM/SIGINT came while the nodes could not be reached).
std::string wait_until_joined(caf::actor_system& system, const caf::actor& cluster,
                              const sigset_t& stop_signals) {
  caf::scoped_actor self{system};
  for (;;) {
    std::string refused;
    bool joined = false;
    self->request(warren::cluster_handle(cluster), std::chrono::seconds(1),
                  warren::ready_atom::value)
        .receive([&] { joined = true; },
                 [&](caf::error& err) {
                   if (err != caf::sec::request_timeout)
                     refused = warren::to_string(warren::describe(err));
                 });
    if (joined || !refused.empty()) return refused;
    timespec now{0, 0};
    if (int sig = sigtimedwait(&stop_signals, nullptr, &now); sig > 0)
      return std::string("stopped by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
             " before joining the cluster";
  }
}

caf::actor start_cluster(caf::actor_system& system, const node_options& opt, caf::actor node,
                         caf::actor persistence, std::vector<warren::cluster_member> stored,
                         uint64_t metadata_version, const sigset_t& stop_signals) {
  auto node_actor = node;
  bool clustered = !opt.link.secret.empty() && opt.cluster_port != 0;
  if (!opt.join.empty() && opt.cluster_port == 0)
    throw std::runtime_error("--join needs a cluster port (--cluster-port is 0)");
  std::string port = std::to_string(opt.cluster_port);
  warren::cluster_config config;
  config.self.name = node_name_of(opt);
  config.first_join = is_first_join(opt, stored);
  config.loopback_only = !opt.link.tls();
  if (clustered) {
    const auto& bind = opt.link.bind;
    bool wildcard = bind == "0.0.0.0" || bind == "::";
    config.self.address = (wildcard ? host_name() : bind) + ":" + port;
    config.secret = opt.link.secret;
    config.join = opt.join;
    config.stored = std::move(stored);
  }
  config.metadata_version = metadata_version;
  config.middleman = warren::node::cluster_connector(system, opt.link);
  config.node = std::move(node);
  config.persistence = std::move(persistence);
  auto cluster = caf::actor_cast<caf::actor>(system.spawn(warren::cluster_actor, config));
  // The vhosts announce their queues to it from now on.
  caf::anon_send(warren::node_handle(node_actor), warren::cluster_atom::value, cluster,
                 config.self.name);
  if (!clustered) {
    warren::log(warren::log_level::info, "cluster",
                "standalone (a cluster needs --cluster-secret and a --cluster-port)");
    return cluster;
  }
  auto published = warren::node::publish_cluster_actor(system, cluster, opt.cluster_port, opt.link);
  if (!published) {
    caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
    throw std::runtime_error("cluster listener on " + opt.link.bind + ":" + port + ": " +
                             system.render(published.error()));
  }
  if (opt.link.tls()) warren::node::log_refused_handshakes_on(*published);
  warren::log(warren::log_level::info, "cluster",
              "node " + config.self.name + " listening on " + config.self.address +
                  (opt.link.tls() ? " (mutual TLS)" : " (loopback, no TLS)"));
  if (auto refused = wait_until_joined(system, cluster, stop_signals); !refused.empty()) {
    caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
    throw std::runtime_error(refused);
  }
  return cluster;
}

// The listeners: Cap'n Proto and AMQP, each in the clear and, given --tls-cert, over TLS.
class front_doors {
 public:
  front_doors(caf::actor_system& system, caf::actor node, caf::actor alarm, std::string name)
      : http_(system, node, alarm, std::move(name)),
        rpc_(system, node),
        rpc_tls_(system, node, "RPC TLS"),
        amqp_(system, node, alarm),
        amqps_(system, node, std::move(alarm), "AMQPS") {}

  /// Starts every listener the options ask for; returns the Cap'n Proto port. Throws
  /// std::runtime_error naming the address or file that stopped one.
  uint16_t start(const node_options& opt) {
    // Unusable TLS files stop the node even when no TLS port is open, so they never go unseen.
    if (!opt.tls.cert.empty()) warren::transport::tls_context::server(opt.tls, nullptr, 0);
    uint16_t port = rpc_.start(opt.bind, opt.port, opt.limits);
    if (opt.amqp_port != 0)
      announce("AMQP 0-9-1", opt, amqp_.start(opt.bind, opt.amqp_port, opt.heartbeat, opt.limits));
    if (opt.http_port != 0)
      announce("management HTTP", opt, http_.start(opt.bind, opt.http_port, opt.limits));
    if (opt.metrics_port != 0)
      announce("Prometheus metrics", opt, http_.start_metrics(opt.bind, opt.metrics_port));
    if (opt.tls.cert.empty()) return port;
    warren::net::listener_tls tls{opt.tls, opt.limits.handshake_timeout_ms};
    if (opt.amqps_port != 0)
      announce("AMQP 0-9-1 over TLS", opt,
               amqps_.start(opt.bind, opt.amqps_port, opt.heartbeat, opt.limits, tls));
    if (opt.tls_port != 0)
      announce("Cap'n Proto over TLS", opt,
               rpc_tls_.start(opt.bind, opt.tls_port, opt.limits, tls));
    return port;
  }

  void stop() {
    http_.stop();
    amqps_.stop();
    amqp_.stop();
    rpc_tls_.stop();
    rpc_.stop();
  }

 private:
  static void announce(const std::string& what, const node_options& opt, uint16_t port) {
    warren::log(warren::log_level::info, "node",
                what + " listener on " + opt.bind + ":" + std::to_string(port));
  }

  warren::net::http::management_server http_;
  warren::net::rpc_server rpc_;
  warren::net::rpc_server rpc_tls_;
  warren::amqp::amqp_server amqp_;
  warren::amqp::amqp_server amqps_;
};

}  // namespace

// The cluster settings, checked together before anything starts; "" when they are fine.
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

int main(int argc, char** argv) {
  node_options opt;
  if (int code = parse_options(argc, argv, opt); code >= 0) return code;
  warren::log_level level;
  warren::parse_log_level(opt.log_level, level);
  warren::set_log_level(level);
  if (auto err = settle_cluster(opt); !err.empty()) {
    warren::log(warren::log_level::error, "cluster", err);
    return 1;
  }

  // Signals are taken synchronously by the main thread (sigwait), so block them before any
  // other thread starts and inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that vanishes mid-write must not kill the broker.
  std::signal(SIGPIPE, SIG_IGN);

  // Storage first: a data dir held by another node, or one it cannot trust, stops us here.
  opened_storage opened;
  try {
    opened = open_storage(opt);
    settle_first_join(opt, opened);
    if (auto err = warren::node::adopt_cluster_tls_files(opt.link, opt.data_dir); !err.empty())
      throw std::runtime_error(err);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "node", e.what());
    return 1;
  }
  auto& storage = opened.storage;
  auto& metadata = opened.metadata;
  auto& contents = opened.contents;
  auto members = std::move(contents.members);
  auto metadata_version = contents.metadata_version;

  caf::actor_system_config cfg;
  cfg.set("scheduler.policy",
          opt.scheduler == "sharing" ? caf::atom("sharing") : caf::atom("stealing"));
  cfg.set("scheduler.max-threads", opt.workers);
  // Node-to-node traffic goes over CAF's middleman; its heartbeats let a silent peer (a cut
  // link, not only a closed socket) count as down.
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.app-identifiers", std::vector<std::string>{"warren"});
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds(1)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(5)});
  warren::register_message_types(cfg);
  warren::node::configure_cluster_link(cfg, opt.link);
  caf::actor_system system{cfg};
  storage.persistence =
      caf::actor_cast<caf::actor>(system.spawn(warren::persistence_actor, metadata));
  auto node = system.spawn(warren::node_actor, storage, std::move(contents));
  {
    // Queues recover their messages before the node says it is ready.
    caf::scoped_actor self{system};
    self->request(node, caf::infinite, warren::ready_atom::value)
        .receive([] {}, [](caf::error&) {});
  }

  auto alarm = system.spawn(warren::resource_alarm,
                            warren::make_resource_limits(opt.memory_high_watermark, storage.memory,
                                                         opt.disk_free_limit, storage.data_dir));
  caf::anon_send(node, warren::alarm_atom::value, caf::actor_cast<caf::actor>(alarm));
  caf::anon_send(node, warren::settings_atom::value, opt.settings);
  caf::actor cluster;
  try {
    cluster = start_cluster(system, opt, caf::actor_cast<caf::actor>(node), storage.persistence,
                            std::move(members), metadata_version, stop_signals);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "cluster", e.what());
    caf::anon_send_exit(alarm, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(storage.persistence, caf::exit_reason::user_shutdown);
    return 1;
  }
  opt.limits.max_message_bytes = opt.settings.max_message_bytes;
  opt.limits.channel_max = opt.settings.channel_max;
  opt.limits.ledger = storage.memory;
  front_doors doors(system, caf::actor_cast<caf::actor>(node), caf::actor_cast<caf::actor>(alarm),
                    node_name_of(opt));
  uint16_t port = 0;
  try {
    port = doors.start(opt);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "node", e.what());
    doors.stop();
    caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(alarm, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(storage.persistence, caf::exit_reason::user_shutdown);
    return 1;
  }
  warren::log(warren::log_level::info, "node",
              "warren-node ready on " + opt.bind + ":" + std::to_string(port));

  warren::node_stats stats(system, caf::actor_cast<caf::actor>(node), opt.stats_interval);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  warren::log(warren::log_level::info, "node",
              std::string("stopping on ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM"));
  doors.stop();
  caf::anon_send_exit(alarm, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(storage.persistence, caf::exit_reason::user_shutdown);
  return 0;  // ~actor_system waits for every actor to finish
}
