// warren-node: the broker process. Reads its flags (apps/node_options.hpp), starts the actor
// system and the Cap'n Proto listener, logs one "ready" line, and stops cleanly on SIGTERM /
// SIGINT. With --check it only checks the data dir (apps/data_check.hpp) and exits.
#include "actors/cluster/cluster_actor.hpp"
#include "actors/common/broker_error.hpp"
#include "actors/common/message_types.hpp"
#include "actors/common/protocol.hpp"
#include "actors/node/node_actor.hpp"
#include "actors/node/resource_alarm.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "apps/cluster_link.hpp"
#include "apps/data_check.hpp"
#include "apps/local_data.hpp"
#include "apps/node_metadata_log.hpp"
#include "apps/node_options.hpp"
#include "apps/node_stats.hpp"
#include "apps/shutdown_deadline.hpp"
#include "core/log.hpp"
#include "net/amqp/amqp_server.hpp"
#include "net/capnp/rpc_server.hpp"
#include "net/http/management_server.hpp"
#include "persistence/data_dir.hpp"
#include "persistence/format1_upgrade.hpp"
#include "persistence/lmdb_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <pthread.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

namespace {

// How long CAF may take to close its connections once everything of the node's own is done
// (apps/shutdown_deadline.hpp); a graceful close takes milliseconds.
constexpr std::chrono::seconds shutdown_grace{10};

using warren::node::node_options;

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
  if (held.empty()) {
    // A metadata log this node held alone is left behind: it joins the cluster's.
    auto moved = warren::node::leave_own_log(*opened.metadata, opt.data_dir);
    if (!moved.empty())
      warren::log(warren::log_level::info, "node",
                  "joining a cluster: this node's own metadata log moved aside to " + moved);
    return;
  }
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

bool is_clustered(const node_options& opt) {
  return !opt.link.secret.empty() && opt.cluster_port != 0;
}

// Spawns the cluster actor; when clustered (a secret and a cluster port), publishes it on the
// cluster port and waits until it joined the nodes --join names. Throws std::runtime_error
// naming what stopped it (the port, a node that refused us).
caf::actor start_cluster(caf::actor_system& system, const node_options& opt, caf::actor node,
                         caf::actor persistence, std::vector<warren::cluster_member> stored,
                         uint64_t metadata_version, std::shared_ptr<warren::raft_relay> relay,
                         const sigset_t& stop_signals) {
  auto node_actor = node;
  bool clustered = is_clustered(opt);
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
  config.new_connector = warren::node::cluster_connectors(system, opt.link);
  config.node = std::move(node);
  config.persistence = std::move(persistence);
  config.raft = std::move(relay);
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

// What the data dir says about the metadata log, and the members known before joining.
warren::node::log_facts local_log_facts(const node_options& opt,
                                        warren::persistence::lmdb_store& store,
                                        const std::vector<warren::cluster_member>& stored) {
  warren::node::log_facts facts;
  facts.identity = store.read_log_identity();
  auto raft = std::filesystem::path(opt.data_dir) / "raft";
  facts.folder = std::filesystem::exists(raft);
  facts.raft_state =
      std::filesystem::exists(raft / "metadata1") || std::filesystem::exists(raft / "metadata2");
  facts.self = node_name_of(opt);
  facts.clustered = is_clustered(opt);
  facts.first_join = is_first_join(opt, stored);
  for (const auto& m : stored)
    if (m.name != facts.self) facts.members.push_back(m.name);
  return facts;
}

// Starts the metadata log the way `how` says, carried by `relay`; throws std::runtime_error.
// Users and permissions then follow the log: the node hears what each entry changed, with the
// relay's token, which never leaves the process.
std::unique_ptr<warren::persistence::metadata_log> start_log(
    const node_options& opt, warren::persistence::lmdb_store& store, warren::node::log_start how,
    const std::shared_ptr<warren::raft_relay>& relay, const warren::node_actor_type& node) {
  warren::node::log_settings settings;
  settings.data_dir = opt.data_dir;
  settings.self = node_name_of(opt);
  settings.send = [relay](const std::string& to, warren::persistence::raft_frame frame) {
    return relay->send(to, std::move(frame));
  };
  auto token = relay->token();
  settings.on_change = [node, token](const std::vector<warren::persistence::meta_mutation>& changes,
                                     bool whole) {
    caf::anon_send(node, warren::applied_atom::value, token, changes, whole);
  };
  // A log made now is empty (its identity's reset clears a former log's seed), and a founder's
  // holds its users as soon as it leads: its changes wait in the log for that seed.
  bool seeded = how == warren::node::log_start::found ||
                (how == warren::node::log_start::open && store.log_seeded());
  caf::anon_send(node, warren::metalog_atom::value, token, seeded);
  auto log = warren::node::start_metadata_log(store, how, settings);
  relay->attach(log.get());
  static const char* verbs[] = {"", "opened", "founded", "joining"};
  warren::log(warren::log_level::info, "cluster",
              std::string("metadata log ") + verbs[static_cast<int>(how)] + " in " + opt.data_dir +
                  "/raft");
  return log;
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

// Signals are taken synchronously by the main thread (sigwait), so block them before any
// other thread starts and inherits the mask.
sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Storage first: a data dir held by another node, or one it cannot trust, stops us here. False
// (and logged) when it does.
bool open_node_storage(node_options& opt, opened_storage& opened) {
  try {
    opened = open_storage(opt);
    settle_first_join(opt, opened);
    if (auto err = warren::node::adopt_cluster_tls_files(opt.link, opt.data_dir); !err.empty())
      throw std::runtime_error(err);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "node", e.what());
    return false;
  }
  return true;
}

void configure_actor_system(caf::actor_system_config& cfg, const node_options& opt) {
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
}

// Spawns the persistence actor and the node over what the storage holds (its contents move to
// the node), and returns once the node is ready.
warren::node_actor_type spawn_node(caf::actor_system& system, opened_storage& opened) {
  auto& storage = opened.storage;
  storage.persistence =
      caf::actor_cast<caf::actor>(system.spawn(warren::persistence_actor, opened.metadata));
  auto node = system.spawn(warren::node_actor, storage, std::move(opened.contents));
  {
    // Queues recover their messages before the node says it is ready.
    caf::scoped_actor self{system};
    self->request(node, caf::infinite, warren::ready_atom::value)
        .receive([] {}, [](caf::error&) {});
  }
  return node;
}

// Gives the node its resource alarm and the connection settings; returns the alarm.
warren::resource_alarm_type start_alarm(caf::actor_system& system, const node_options& opt,
                                        const warren::node_actor_type& node,
                                        const warren::storage_context& storage) {
  auto alarm = system.spawn(warren::resource_alarm,
                            warren::make_resource_limits(opt.memory_high_watermark, storage.memory,
                                                         opt.disk_free_limit, storage.data_dir));
  caf::anon_send(node, warren::alarm_atom::value, caf::actor_cast<caf::actor>(alarm));
  caf::anon_send(node, warren::settings_atom::value, opt.settings);
  return alarm;
}

// Starts the actors, the cluster and the listeners over the opened storage, then runs until
// SIGTERM / SIGINT, and returns the exit code. What it spawned it stops, also when a step fails.
int run_node(caf::actor_system& system, node_options& opt, opened_storage& opened,
             const sigset_t& stop_signals) {
  auto& storage = opened.storage;
  auto members = std::move(opened.contents.members);
  auto metadata_version = opened.contents.metadata_version;
  auto store = opened.metadata;
  auto relay = std::make_shared<warren::raft_relay>();
  std::unique_ptr<warren::persistence::metadata_log> metadata_log;
  auto node = spawn_node(system, opened);
  auto alarm = start_alarm(system, opt, node, storage);
  caf::actor cluster;
  try {
    // Started before the cluster, so that the members this node meets learn it holds one.
    auto facts = local_log_facts(opt, *store, members);
    auto former = warren::node::leave_log_of_former_name(*store, facts, opt.data_dir);
    if (!former.empty())
      warren::log(
          warren::log_level::info, "cluster",
          "the metadata log this node held alone under another name moved aside to " + former);
    auto how = warren::node::decide_log_start(facts, opt.data_dir);
    if (how != warren::node::log_start::none)
      metadata_log = start_log(opt, *store, how, relay, node);
    cluster = start_cluster(system, opt, caf::actor_cast<caf::actor>(node), storage.persistence,
                            std::move(members), metadata_version, relay, stop_signals);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "cluster", e.what());
    relay->attach(nullptr);
    metadata_log.reset();
    if (cluster) caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
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
    relay->attach(nullptr);
    metadata_log.reset();
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
  relay->attach(nullptr);
  metadata_log.reset();
  caf::anon_send_exit(alarm, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(storage.persistence, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  node_options opt;
  if (int code = warren::node::parse_options(argc, argv, opt); code >= 0) return code;
  // A check of the data dir starts nothing else: no actor system, no listener.
  if (opt.check) return warren::node::check_data_dir(opt.data_dir, opt.repair, std::cout);
  warren::log_level level;
  warren::parse_log_level(opt.log_level, level);
  warren::set_log_level(level);
  if (auto err = warren::node::settle_cluster(opt); !err.empty()) {
    warren::log(warren::log_level::error, "cluster", err);
    return 1;
  }

  auto stop_signals = block_stop_signals();
  // A client that vanishes mid-write must not kill the broker.
  std::signal(SIGPIPE, SIG_IGN);

  opened_storage opened;
  if (!open_node_storage(opt, opened)) return 1;
  caf::actor_system_config cfg;
  configure_actor_system(cfg, opt);
  warren::shutdown_deadline deadline;  // outlives the actor system: bounds its destructor
  caf::actor_system system{cfg};
  int code = run_node(system, opt, opened, stop_signals);
  // Every actor of ours finishes, then the metadata store and the queues' files close; what
  // ~actor_system has left to do is CAF closing its connections, which may never end. The data
  // dir stays locked until the process ends: its cluster port is still bound until then.
  system.await_all_actors_done();
  opened.storage = warren::storage_context{};
  opened.contents = {};
  opened.metadata.reset();
  deadline.arm(shutdown_grace, code);
  return code;
}
