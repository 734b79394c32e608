#include "net/http/api_context.hpp"
#include "core/clock.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace warren::net::http {

namespace {

std::string queue_key(const queue_info& q) {
  return q.vhost + '\n' + q.spec.name;
}

constexpr size_t history_points = 600;  // ten minutes of one reading a second

}  // namespace

void rate_tracker::observe(const node_stats_info& stats) {
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - previous_at_).count();
  bool first = previous_at_ == std::chrono::steady_clock::time_point{};
  if (!first && seconds < 1.0) return;  // too close to the last reading to tell
  std::map<std::string, traffic_counters> current;
  std::map<std::string, traffic_rates> rates;
  traffic_rates total;
  for (const auto& q : stats.queues) {
    auto key = queue_key(q);
    current[key] = q.traffic;
    if (first) continue;
    auto before = previous_.find(key);
    auto r = rates_between(before == previous_.end() ? traffic_counters{} : before->second,
                           q.traffic, seconds);
    rates[key] = r;
    total += r;
  }
  previous_ = std::move(current);
  previous_at_ = now;
  rates_ = std::move(rates);
  if (first) return;
  history_.push_back({wall_ms(), total});
  if (history_.size() > history_points) history_.pop_front();
}

traffic_rates rate_tracker::of(const queue_info& q) const {
  auto r = rates_.find(queue_key(q));
  return r == rates_.end() ? traffic_rates{} : r->second;
}

bool api_request::has_tag(const std::string& t) const {
  return std::find(tags.begin(), tags.end(), t) != tags.end();
}

bool api_request::may_see(const std::string& vhost) const {
  return sees_all() || std::find(vhosts.begin(), vhosts.end(), vhost) != vhosts.end();
}

std::string api_request::home_vhost() const {
  if (vhosts.empty() || std::find(vhosts.begin(), vhosts.end(), "/") != vhosts.end()) return "/";
  return vhosts.front();
}

uint64_t api_request::number(const std::string& key, uint64_t fallback) const {
  auto q = query.find(key);
  if (q == query.end() || q->second.empty()) return fallback;
  const auto& text = q->second;
  if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 15)
    throw std::invalid_argument("query parameter " + key + "=" + text + " is not a whole number");
  return std::stoull(text);
}

kj::Promise<session_ptr> open_session(api_env& env, const api_request& req,
                                      const std::string& vhost) {
  client_hello hello{vhost,         req.user,          req.password, "management API",
                     req.peer.name, req.peer.loopback, true};
  auto s = rpc_session::create(env.system, env.node, env.bridge, std::move(hello));
  auto channel = s->allocate_channel();
  return s->request([s](uint64_t id) { s->conn().open(id); })
      .then([s, channel](request_answer) {
        return s->request([s, channel](uint64_t id) { s->conn().open_channel(id, channel); });
      })
      .then([s](request_answer) { return s; });
}

kj::Promise<request_answer> call(const session_ptr& s, session_call send) {
  return s->request([s, send = std::move(send)](uint64_t id) { send(s->conn(), id, 1); })
      .then([s](request_answer answer) { return answer; });
}

kj::Promise<request_answer> as_user(api_env& env, const api_request& req, const std::string& vhost,
                                    session_call send) {
  return open_session(env, req, vhost).then([send = std::move(send)](session_ptr s) mutable {
    return call(s, std::move(send));
  });
}

kj::Promise<node_stats_info> node_stats(api_env& env) {
  return env.query->ask<node_stats_info>(stats_atom::value).then([&env](caf::message m) {
    auto stats = m.get_as<node_stats_info>(0);
    env.rates.observe(stats);
    return stats;
  });
}

kj::Promise<std::vector<std::string>> all_vhosts(api_env& env) {
  return env.query->ask<std::vector<std::string>>(list_atom::value, vhost_atom::value)
      .then([](caf::message m) { return m.get_as<std::vector<std::string>>(0); });
}

kj::Promise<std::vector<node_info>> all_nodes(api_env& env) {
  return env.query->ask<std::vector<node_info>>(list_atom::value, nodes_atom::value)
      .then([](caf::message m) { return m.get_as<std::vector<node_info>>(0); });
}

}  // namespace warren::net::http
