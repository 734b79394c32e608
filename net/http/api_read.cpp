// GET handlers: overview, nodes, vhosts, queues, connections, and the per-vhost listings.
#include "net/http/api_json.hpp"
#include "net/http/api_routes.hpp"

#include "core/definitions_json.hpp"

#include <set>

namespace warren::net::http {

using json = nlohmann::json;

namespace {

template <class Row>
std::vector<Row> visible(std::vector<Row> rows, const api_request& req, const std::string& vhost) {
  std::vector<Row> out;
  for (auto& r : rows)
    if (req.may_see(r.vhost) && (vhost.empty() || r.vhost == vhost)) out.push_back(std::move(r));
  return out;
}

// The vhost named by path segment 1, or empty for every one.
std::string path_vhost(const api_request& req) {
  return req.path.size() > 1 ? req.path[1] : std::string();
}

json totals(api_env& env, const std::vector<queue_info>& queues) {
  traffic_counters counts;
  traffic_rates rates;
  uint64_t ready = 0, unacked = 0, consumers = 0;
  for (const auto& q : queues) {
    counts += q.traffic;
    rates += env.rates.of(q);
    ready += q.ready;
    unacked += q.unacked;
    consumers += q.consumers;
  }
  return {{"message_stats", message_stats(counts, rates)},
          {"queue_totals",
           {{"messages", ready + unacked},
            {"messages_ready", ready},
            {"messages_unacknowledged", unacked}}},
          {"consumers", consumers}};
}

json rate_history(api_env& env) {
  json out = json::array();
  for (const auto& p : env.rates.history())
    out.push_back({{"t", p.at_ms},
                   {"publish", p.rates.published},
                   {"deliver_get", p.rates.delivered},
                   {"ack", p.rates.acked}});
  return out;
}

}  // namespace

kj::Promise<http_reply> get_overview(api_env& env, const api_request& req) {
  return node_stats(env).then([&env, req](node_stats_info stats) {
    auto queues = visible(stats.queues, req, {});
    auto conns = visible(stats.connections, req, {});
    auto t = totals(env, queues);
    json out = {
        {"management_version", "3.10.8"},
        {"rabbitmq_version", "3.10.8"},
        {"product_name", "Warren"},
        {"product_version", WARREN_VERSION},
        {"cluster_name", env.node_name},
        {"node", env.node_name},
        {"uptime", stats.uptime_ms},
        {"mem_used", stats.rss_bytes},
        {"message_memory", stats.memory_bytes},
        {"message_stats", t["message_stats"]},
        {"queue_totals", t["queue_totals"]},
        {"object_totals",
         {{"queues", queues.size()}, {"connections", conns.size()}, {"consumers", t["consumers"]}}},
        {"alarms", env.alarms ? env.alarms() : std::vector<std::string>{}},
        // The history sums every vhost: only for those who may see them all.
        {"rate_history", req.sees_all() ? rate_history(env) : json::array()}};
    return json_reply(out);
  });
}

kj::Promise<http_reply> get_nodes(api_env& env, const api_request&) {
  return node_stats(env).then([&env](node_stats_info stats) {
    return all_nodes(env).then([stats = std::move(stats)](std::vector<node_info> nodes) {
      json out = json::array();
      for (const auto& n : nodes) out.push_back(node_json(n, stats));
      return json_reply(out);
    });
  });
}

kj::Promise<http_reply> get_vhosts(api_env& env, const api_request& req) {
  return node_stats(env).then([&env, req](node_stats_info stats) {
    return all_vhosts(env).then([&env, req, stats](std::vector<std::string> names) {
      json out = json::array();
      for (const auto& name : names) {
        if (!req.may_see(name) || (req.path.size() > 1 && req.path[1] != name)) continue;
        auto t = totals(env, visible(stats.queues, req, name));
        out.push_back({{"name", name},
                       {"messages", t["queue_totals"]["messages"]},
                       {"messages_ready", t["queue_totals"]["messages_ready"]},
                       {"messages_unacknowledged", t["queue_totals"]["messages_unacknowledged"]},
                       {"message_stats", t["message_stats"]},
                       {"tracing", false}});
      }
      if (req.path.size() > 1)
        return out.empty() ? error_reply(404, "Object Not Found", "no vhost " + req.path[1])
                           : json_reply(out[0]);
      return json_reply(out);
    });
  });
}

kj::Promise<http_reply> get_queues(api_env& env, const api_request& req) {
  return node_stats(env).then([&env, req](node_stats_info stats) {
    auto queues = visible(stats.queues, req, path_vhost(req));
    if (req.path.size() > 2) {
      for (const auto& q : queues)
        if (q.spec.name == req.path[2]) return json_reply(queue_json(q, env.rates.of(q)));
      return error_reply(404, "Object Not Found",
                         "no queue '" + req.path[2] + "' in vhost '" + req.path[1] + "'");
    }
    json out = json::array();
    for (const auto& q : queues) out.push_back(queue_json(q, env.rates.of(q)));
    return json_reply(out);
  });
}

kj::Promise<http_reply> get_connections(api_env& env, const api_request& req) {
  return node_stats(env).then([&env, req](node_stats_info stats) {
    json out = json::array();
    for (const auto& c : visible(stats.connections, req, {}))
      if (req.path.size() < 2 || c.name == req.path[1])
        out.push_back(connection_json(c, env.node_name));
    if (req.path.size() > 1)
      return out.empty() ? error_reply(404, "Object Not Found", "no connection " + req.path[1])
                         : json_reply(out[0]);
    return json_reply(out);
  });
}

namespace {

// One vhost's exchanges, bindings or consumers as JSON rows.
kj::Promise<json> vhost_rows(api_env& env, const api_request& req, const std::string& vhost,
                             const std::string& what) {
  return as_user(env, req, vhost,
                 [what](connection_ref& c, uint64_t id, uint16_t) {
                   if (what == "exchanges")
                     c.list_exchanges(id);
                   else if (what == "bindings")
                     c.list_bindings(id);
                   else
                     c.list_consumers(id);
                 })
      .then([what](request_answer answer) {
        json rows = json::array();
        if (what == "exchanges")
          for (const auto& e : answer_as<std::vector<exchange_info>>(answer))
            rows.push_back(exchange_json(e));
        else if (what == "bindings")
          for (const auto& b : answer_as<std::vector<binding_info>>(answer))
            rows.push_back(binding_json(b));
        else
          for (const auto& c : answer_as<std::vector<consumer_info>>(answer))
            rows.push_back(consumer_json(c));
        return rows;
      });
}

// RabbitMQ lists channels; Warren's listings know the channels that have consumers.
json channels_of(const json& consumers) {
  json out = json::array();
  std::set<std::string> seen;
  for (const auto& c : consumers) {
    const auto& ch = c["channel_details"];
    if (!seen.insert(ch["name"].get<std::string>()).second) continue;
    out.push_back({{"name", ch["name"]},
                   {"number", ch["number"]},
                   {"connection_details", {{"name", ch["connection_name"]}}},
                   {"vhost", c["queue"]["vhost"]}});
  }
  return out;
}

// Rows of a listing narrowed by the path below the vhost: /exchanges/v/name, /bindings/v/e/x/q/y.
json narrow(const std::string& what, const api_request& req, json rows) {
  if (what == "exchanges" && req.path.size() > 2) {
    auto name = exchange_from_path(req.path[2]);
    for (auto& r : rows)
      if (r["name"] == name) return r;
    return nullptr;
  }
  if (what == "bindings" && req.path.size() > 3) {
    json out = json::array();
    for (auto& r : rows) {
      bool source = req.path[2] == "e" && r["source"] == exchange_from_path(req.path[3]);
      bool dest = req.path.size() > 5 && r["destination"] == req.path[5] &&
                  r["destination_type"] == (req.path[4] == "q" ? "queue" : "exchange");
      if (source && (req.path.size() <= 5 || dest)) out.push_back(r);
    }
    return out;
  }
  return rows;
}

}  // namespace

kj::Promise<http_reply> get_vhost_listing(api_env& env, const api_request& req) {
  auto what = req.path[0] == "channels" ? std::string("consumers") : req.path[0];
  auto one = req.path[0] == "channels" ? std::string() : path_vhost(req);
  auto names = one.empty() ? (req.sees_all() ? all_vhosts(env)
                                             : kj::Promise<std::vector<std::string>>(req.vhosts))
                           : kj::Promise<std::vector<std::string>>(std::vector<std::string>{one});
  return names.then([&env, req, what](std::vector<std::string> vhosts) {
    auto parts = kj::heapArrayBuilder<kj::Promise<json>>(vhosts.size());
    for (const auto& v : vhosts) parts.add(vhost_rows(env, req, v, what));
    return kj::joinPromises(parts.finish()).then([req, what](kj::Array<json> lists) {
      json rows = json::array();
      for (auto& l : lists)
        for (auto& r : l) rows.push_back(std::move(r));
      if (req.path[0] == "channels") return json_reply(channels_of(rows));
      auto out = narrow(what, req, std::move(rows));
      if (out.is_null())
        return error_reply(404, "Object Not Found", "no exchange '" + req.path[2] + "'");
      return json_reply(out);
    });
  });
}

kj::Promise<http_reply> get_queue_bindings(api_env& env, const api_request& req) {
  auto queue = req.path[2];
  return as_user(env, req, req.path[1],
                 [](connection_ref& c, uint64_t id, uint16_t) { c.list_bindings(id); })
      .then([queue](request_answer answer) {
        json out = json::array();
        for (const auto& b : answer_as<std::vector<binding_info>>(answer))
          if (!b.spec.to_exchange && b.spec.destination == queue) out.push_back(binding_json(b));
        return json_reply(out);
      });
}

kj::Promise<http_reply> get_admin_listing(api_env& env, const api_request& req) {
  const auto& what = req.path[0];
  return as_user(env, req, req.home_vhost(),
                 [what](connection_ref& c, uint64_t id, uint16_t) {
                   if (what == "users")
                     c.list_users(id);
                   else if (what == "permissions")
                     c.list_permissions(id);
                   else
                     c.export_definitions(id);
                 })
      .then([req](request_answer answer) {
        const auto& what = req.path[0];
        if (what == "definitions") {
          auto j = definitions_to_json(answer_as<definitions>(answer));
          j["rabbit_version"] = "3.10.8";
          return json_reply(j);
        }
        json out = json::array();
        if (what == "users") {
          for (const auto& u : answer_as<std::vector<user_record>>(answer))
            if (req.path.size() < 2 || u.name == req.path[1]) out.push_back(user_json(u));
        } else {
          for (const auto& p : answer_as<std::vector<permission_record>>(answer))
            if (req.path.size() < 3 || (p.vhost == req.path[1] && p.user == req.path[2]))
              out.push_back(permission_json(p));
        }
        if (req.path.size() > 1 && what == "users")
          return out.empty() ? error_reply(404, "Object Not Found", "no user " + req.path[1])
                             : json_reply(out[0]);
        return json_reply(out);
      });
}

}  // namespace warren::net::http
