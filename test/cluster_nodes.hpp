// Helpers for tests that run a cluster of real warren-node processes: their arguments, what a
// node sees of the cluster (polled, since changes reach other members asynchronously), and
// clients connected to one node. Every poll gives up after a minute: a guard against a hung
// test, not a speed expectation.
#pragma once

#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace warren::test::cluster {

using json = nlohmann::json;
using names = std::set<std::string>;

inline const std::string secret = "cluster test secret";

std::string address(uint16_t port);

/// Arguments of a clustered node named `name` on `cluster_port`, joining `join` (may be empty),
/// with mutual TLS on the cluster link (shared_certificates()).
std::vector<std::string> cluster_args(const std::string& name, uint16_t cluster_port,
                                      const std::string& join = {},
                                      const std::string& with_secret = secret);

/// warren-node with `args` on `data_dir`, its client ports off, run to its end (a node that
/// should not start) or for at most `seconds`: its exit code (124 when the TERM at the end
/// stopped it, 137 when it did not and it was killed 30 s later) and its output.
command_result run_node(const std::string& data_dir, const std::vector<std::string>& args,
                        int seconds = 60);

/// `warrenctl --json ARGS` against `node`, parsed; fails the test when warrenctl fails.
json warrenctl_json(const node_process& node, std::vector<std::string> args);

/// name -> running, as `node` sees the cluster.
std::map<std::string, bool> members_seen_by(const node_process& node);
/// Polls until `node` sees exactly `expected`.
bool sees(const node_process& node, const std::map<std::string, bool>& expected);
/// The message of what `change` threw; "" when it did not throw.
template <class F>
std::string refusal_of(F change) {
  try {
    change();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

/// Nodes a, b and c on their own data dirs, b and c joining a; built once all three vote in the
/// metadata log. A member is restarted by resetting it first, then starting it on its dir.
struct three_nodes {
  uint16_t pa = free_port(), pb = free_port(), pc = free_port();
  temp_dir a_dir, b_dir, c_dir;
  std::unique_ptr<node_process> a, b, c;

  three_nodes();
  std::vector<node_process*> all() { return {a.get(), b.get(), c.get()}; }
};

/// Polls until `node` lists exactly `voters` as voting in the metadata log.
bool log_voters_seen(const node_process& node, const names& voters);
/// Polls until `node` names `leader` as the metadata log's leader ("": none).
bool log_leader_seen(const node_process& node, const std::string& leader);

std::unique_ptr<client::connection> connect(const node_process& node);

/// Declare options for a durable exchange, and for a durable queue.
inline client::exchange_options durable_exchange() {
  client::exchange_options o;
  o.durable = true;
  return o;
}
inline client::queue_options durable_queue() {
  client::queue_options o;
  o.durable = true;
  return o;
}

/// The node `queue` (in vhost "/") lives on, as `node` lists it ("" for none).
std::string home_of(const node_process& node, const std::string& queue);
bool home_seen(const node_process& node, const std::string& queue, const std::string& home);

/// `count` persistent, mandatory messages "m0", "m1", ... for the default exchange.
std::vector<client::outbound_message> numbered(const std::string& queue, int count);

/// Bindings of `exchange` as `node` has them: "queue key" each; polled until equal.
std::set<std::string> bindings_on(const node_process& node, const std::string& exchange);
bool bindings_seen(const node_process& node, const std::string& exchange,
                   const std::set<std::string>& expected);

/// The exchanges of vhost "/" that are not built in, as "name:type"; polled until equal.
names exchanges_on(const node_process& node);
bool exchanges_seen(const node_process& node, const names& expected);

/// Ready messages of `queue`, by a passive declare.
uint32_t ready_in(client::channel& ch, const std::string& queue);

/// Polls until `node`'s users, vhosts and permissions ("user@vhost:c/w/r") satisfy `pred`.
using access_predicate =
    std::function<bool(const names& users, const names& vhosts, const names& permissions)>;
bool access_seen(const node_process& node, const access_predicate& pred);

/// Whether `user` can log in to `vhost` on `node` and declare a queue there; polled.
bool logs_in(const node_process& node, const std::string& user, const std::string& password,
             const std::string& vhost);
bool eventually_logs_in(const node_process& node, const std::string& user,
                        const std::string& password, const std::string& vhost);

}  // namespace warren::test::cluster
