// warren-node: the broker process. Parses flags, starts the actor system and the Cap'n Proto
// listener, logs one "ready" line, and stops cleanly on SIGTERM / SIGINT.
#include "actors/log.hpp"
#include "actors/node_actor.hpp"
#include "actors/protocol.hpp"
#include "apps/node_stats.hpp"
#include "net/rpc_server.hpp"

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <pthread.h>
#include <csignal>
#include <cstdlib>

namespace {

struct node_options {
  std::string bind = "127.0.0.1";
  uint16_t port = 5680;
  std::string log_level = "info";
  std::string scheduler = "sharing";
  size_t workers = 2;
  unsigned stats_interval = 0;
};

}  // namespace

int main(int argc, char** argv) {
  node_options opt;
  CLI::App app{"warren-node: the Warren message broker"};
  app.add_option("--bind", opt.bind, "address to listen on")->capture_default_str();
  app.add_option("--port", opt.port, "Cap'n Proto RPC port (0 picks a free one)")
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
  app.add_option("--stats-interval", opt.stats_interval,
                 "log a table of active queues every SECS seconds (0 = off)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  warren::log_level level;
  warren::parse_log_level(opt.log_level, level);
  warren::set_log_level(level);

  // Signals are taken synchronously by the main thread (sigwait), so block them before any
  // other thread starts and inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that vanishes mid-write must not kill the broker.
  std::signal(SIGPIPE, SIG_IGN);

  caf::actor_system_config cfg;
  cfg.set("scheduler.policy",
          opt.scheduler == "sharing" ? caf::atom("sharing") : caf::atom("stealing"));
  cfg.set("scheduler.max-threads", opt.workers);
  caf::actor_system system{cfg};
  auto node = system.spawn(warren::node_actor);

  warren::net::rpc_server server(system, node);
  uint16_t port = 0;
  try {
    port = server.start(opt.bind, opt.port);
  } catch (const std::exception& e) {
    warren::log(warren::log_level::error, "node", e.what());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  warren::log(warren::log_level::info, "node",
              "warren-node ready on " + opt.bind + ":" + std::to_string(port));

  warren::node_stats stats(system, node, opt.stats_interval);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  warren::log(warren::log_level::info, "node",
              std::string("stopping on ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM"));
  server.stop();
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  return 0;  // ~actor_system waits for every actor to finish
}
