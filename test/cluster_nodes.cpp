#include "cluster_nodes.hpp"

#include "certificates.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <iostream>
#include <thread>

namespace warren::test::cluster {

std::string address(uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

// Arguments of a clustered node named `name` on `cluster_port`, joining `join` (may be empty).
std::vector<std::string> cluster_args(const std::string& name, uint16_t cluster_port,
                                      const std::string& join, const std::string& with_secret) {
  const auto& certs = shared_certificates();
  std::vector<std::string> args{"--cluster-port",     std::to_string(cluster_port),
                                "--node-name",        name,
                                "--cluster-secret",   with_secret,
                                "--cluster-tls-cert", certs.path("server.pem"),
                                "--cluster-tls-key",  certs.path("server.key"),
                                "--cluster-tls-ca",   certs.path("ca.pem")};
  if (!join.empty()) args.insert(args.end(), {"--join", join});
  return args;
}

command_result run_node(const std::string& data_dir, const std::vector<std::string>& args,
                        int seconds) {
  // A node that does not stop on the TERM is killed 30 s later (exit code 137), rather than
  // holding the test until ctest's limit.
  std::vector<std::string> argv{"/usr/bin/timeout",
                                "--kill-after=30",
                                std::to_string(seconds),
                                node_binary(),
                                "--port",
                                "0",
                                "--amqp-port",
                                "0",
                                "--http-port",
                                "0",
                                "--metrics-port",
                                "0",
                                "--data-dir",
                                data_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

json warrenctl_json(const node_process& node, std::vector<std::string> args) {
  args.insert(args.begin(), {WARRENCTL_PATH, "--port", std::to_string(node.port()), "--json"});
  auto r = run_command(args);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "warrenctl failed: " << r.err);
  return json::parse(r.out);
}

// name -> running, as `node` sees the cluster.
std::map<std::string, bool> members_seen_by(const node_process& node) {
  std::map<std::string, bool> out;
  for (const auto& row : warrenctl_json(node, {"list", "nodes"}))
    out[row["name"].get<std::string>()] = row["running"].get<bool>();
  return out;
}

namespace {

// Polls until `holds(rows of warrenctl list nodes)` is true. Joining, noticing a dead peer and
// electing take network round trips and timeouts; the minute is a guard against hanging, not a
// speed test.
template <class Check>
bool nodes_listed(const node_process& node, Check holds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (holds(warrenctl_json(node, {"list", "nodes"}))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cerr << "last seen: " << warrenctl_json(node, {"list", "nodes"}).dump() << std::endl;
  return false;
}

}  // namespace

bool sees(const node_process& node, const std::map<std::string, bool>& expected) {
  return nodes_listed(node, [&](const json&) { return members_seen_by(node) == expected; });
}

bool log_voters_seen(const node_process& node, const names& voters) {
  return nodes_listed(node, [&](const json& rows) {
    names voting;
    for (const auto& row : rows)
      if (row["voter"].get<bool>()) voting.insert(row["name"].get<std::string>());
    return voting == voters;
  });
}

bool log_leader_seen(const node_process& node, const std::string& leader) {
  return nodes_listed(node, [&](const json& rows) {
    std::string named;
    for (const auto& row : rows)
      if (row["leader"].get<bool>()) named = row["name"].get<std::string>();
    return named == leader;
  });
}

three_nodes::three_nodes() {
  a = std::make_unique<node_process>(cluster_args("a", pa), a_dir.path());
  b = std::make_unique<node_process>(cluster_args("b", pb, address(pa)), b_dir.path());
  c = std::make_unique<node_process>(cluster_args("c", pc, address(pa)), c_dir.path());
  BOOST_REQUIRE(log_voters_seen(*a, {"a", "b", "c"}));
}

std::unique_ptr<warren::client::connection> connect(const node_process& node) {
  warren::client::connect_options o;
  o.port = node.port();
  return warren::client::connection::open(o);
}

// The node each queue of `node`'s vhost "/" lives on, by name ("" for none).
std::string home_of(const node_process& node, const std::string& queue) {
  for (const auto& q : connect(node)->list_queues())
    if (q.name == queue) return q.node;
  return {};
}

bool home_seen(const node_process& node, const std::string& queue, const std::string& home) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (home_of(node, queue) == home) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::vector<warren::client::outbound_message> numbered(const std::string& queue, int count) {
  std::vector<warren::client::outbound_message> out;
  for (int i = 0; i < count; ++i) {
    warren::client::outbound_message m;
    m.routing_key = queue;
    m.body = "m" + std::to_string(i);
    m.properties.persistent = true;
    m.mandatory = true;
    out.push_back(std::move(m));
  }
  return out;
}

// Bindings of `exchange` as `node` has them: "queue key" each.
std::set<std::string> bindings_on(const node_process& node, const std::string& exchange) {
  std::set<std::string> out;
  for (const auto& b : connect(node)->list_bindings())
    if (b.exchange == exchange) out.insert(b.queue + " " + b.key);
  return out;
}

bool bindings_seen(const node_process& node, const std::string& exchange,
                   const std::set<std::string>& expected) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (bindings_on(node, exchange) == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string seen;
  for (const auto& b : bindings_on(node, exchange)) seen += "'" + b + "' ";
  auto log = node.log();
  std::cerr << "bindings of " << exchange << " last seen: " << seen << "\nthe node's log ends:\n"
            << log.substr(log.size() > 6000 ? log.size() - 6000 : 0) << std::endl;
  return false;
}

names exchanges_on(const node_process& node) {
  names out;
  for (const auto& e : connect(node)->list_exchanges())
    if (e.vhost == "/" && !e.name.empty() && e.name.rfind("amq.", 0) != 0)
      out.insert(e.name + ":" + e.type);
  return out;
}

bool exchanges_seen(const node_process& node, const names& expected) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (exchanges_on(node) == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string seen;
  for (const auto& e : exchanges_on(node)) seen += e + " ";
  std::cerr << "exchanges last seen: " << seen << std::endl;
  return false;
}

uint32_t ready_in(warren::client::channel& ch, const std::string& queue) {
  warren::client::queue_options passive;
  passive.passive = true;
  return ch.queue_declare(queue, passive).message_count;
}

// Polls until `node`'s users, vhosts and permissions (as `describe` prints them) satisfy `pred`.
bool access_seen(const node_process& node, const access_predicate& pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    auto conn = connect(node);
    std::set<std::string> users, vhosts, permissions;
    for (const auto& u : conn->list_users()) users.insert(u.name);
    for (const auto& v : conn->list_vhosts()) vhosts.insert(v);
    for (const auto& p : conn->list_permissions())
      permissions.insert(p.user + "@" + p.vhost + ":" + p.configure + "/" + p.write + "/" + p.read);
    if (pred(users, vhosts, permissions)) return true;
    if (std::chrono::steady_clock::now() + std::chrono::milliseconds(100) >= deadline) {
      std::string seen;
      for (const auto* set : {&users, &vhosts, &permissions})
        for (const auto& x : *set) seen += x + " ";
      std::cerr << "last seen: " << seen << std::endl;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool logs_in(const node_process& node, const std::string& user, const std::string& password,
             const std::string& vhost) {
  warren::client::connect_options o;
  o.port = node.port();
  o.user = user;
  o.password = password;
  o.vhost = vhost;
  try {
    warren::client::connection::open(o)->open_channel()->queue_declare("", {});
    return true;
  } catch (const warren::client::error& e) {
    BOOST_TEST_MESSAGE(user << " on " << vhost << ": " << e.what());
    return false;
  }
}

// Polls until logging in as `user` on `node` succeeds (changes reach other members
// asynchronously).
bool eventually_logs_in(const node_process& node, const std::string& user,
                        const std::string& password, const std::string& vhost) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (logs_in(node, user, password, vhost)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace warren::test::cluster
