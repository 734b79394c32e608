// api_context: one management request and what answering it needs: who asked (checked against
// the node's users), the node's statistics with rates, and sessions that act as that user.
//
// Anything that needs the user's rights (declaring, deleting, publishing, getting, users,
// permissions, definitions) goes through a session: a connection actor logged in as the user in
// the vhost concerned, marked internal so that it is neither listed nor counted as a client
// connection. Its permission checks are the ones AMQP and Cap'n Proto clients meet. Reads of
// statistics go straight to the node and are filtered here to the vhosts the user may see
// (RabbitMQ's rule: every vhost for tags administrator and monitoring, else those with
// permissions).
#pragma once

#include "core/traffic.hpp"
#include "net/capnp/rpc_session.hpp"
#include "net/http/http_reply.hpp"
#include "net/http/node_query.hpp"
#include "net/listener_thread.hpp"

#include <kj/compat/http.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace warren::net::http {

/// Per-queue rates between readings of the node's statistics at least a second apart, and a
/// short history of the node's totals for the web page's charts.
class rate_tracker {
 public:
  struct point {
    int64_t at_ms;  // wall clock
    traffic_rates rates;
  };

  void observe(const node_stats_info& stats);
  traffic_rates of(const queue_info& q) const;
  const std::deque<point>& history() const { return history_; }

 private:
  std::map<std::string, traffic_counters> previous_;
  std::chrono::steady_clock::time_point previous_at_{};
  std::map<std::string, traffic_rates> rates_;
  std::deque<point> history_;
};

/// What every request shares: the actor system, the node and the loop.
struct api_env {
  caf::actor_system& system;
  caf::actor node;
  std::shared_ptr<transport::loop_bridge> bridge;
  std::shared_ptr<node_query> query;
  rate_tracker rates;
  std::string node_name;
  std::function<std::vector<std::string>()> alarms;  // "memory", "disk" while they hold
};

struct api_request {
  kj::HttpMethod method = kj::HttpMethod::GET;
  std::vector<std::string> path;  // decoded segments after /api
  std::map<std::string, std::string> query;
  std::string body;
  std::string user, password;
  peer_address peer;
  std::vector<std::string> tags;
  std::vector<std::string> vhosts;  // the user's, with permissions

  bool has_tag(const std::string& t) const;
  /// Administrator or monitoring: sees every vhost.
  bool sees_all() const { return has_tag("administrator") || has_tag("monitoring"); }
  bool may_see(const std::string& vhost) const;
  /// The vhost a node-wide request logs in to: "/" when the user has it, else its first.
  std::string home_vhost() const;
  /// Query parameter `key` as a number, or `fallback`; throws std::invalid_argument naming it.
  uint64_t number(const std::string& key, uint64_t fallback) const;
};

using session_ptr = std::shared_ptr<rpc_session>;
using session_call = std::function<void(connection_ref&, uint64_t request, uint16_t channel)>;

/// A session logged in as the request's user to `vhost`, with channel 1 open. It closes (and
/// its connection actor requeues what it held) when the last reference goes.
kj::Promise<session_ptr> open_session(api_env& env, const api_request& req,
                                      const std::string& vhost);

/// One request on a session's channel 1: resolves with the answer.
kj::Promise<request_answer> call(const session_ptr& s, session_call send);

/// Logs in as the request's user to `vhost`, sends what `send` sends, and resolves with the
/// answer.
kj::Promise<request_answer> as_user(api_env& env, const api_request& req, const std::string& vhost,
                                    session_call send);

/// The node's statistics (every vhost), also fed to the rate tracker.
kj::Promise<node_stats_info> node_stats(api_env& env);

/// The node's vhosts and cluster members.
kj::Promise<std::vector<std::string>> all_vhosts(api_env& env);
kj::Promise<std::vector<node_info>> all_nodes(api_env& env);

}  // namespace warren::net::http
