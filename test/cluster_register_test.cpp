// A Jepsen-style check of the metadata log on real warren-node processes (issue 33): one register,
// vhost "reg"'s max-queues limit, written and read by a client on every member while members
// are killed (-9) and restarted, must be linearizable (test/register_history.*). Reads go
// through sync_metadata (a plain read is local and may be stale by design). After healing,
// every member holds the last value. Beside it, sets: the same clients add users, vhosts,
// durable exchanges and durable queues (names of their own), bind exchange "hub" to their
// exchanges, and delete and unbind ones they added, and all declare a few shared queue names;
// healed, every member must hold the same users, vhosts, permissions, durable exchanges,
// bindings between them and durable queues (each on the same node), no member may list two
// queues of one name, every answered add not deleted since must be there, and every answered
// delete must have left none (deleting an exchange removes the bindings to it).
//
// A run is drawn from a seed, printed at the start; WARREN_CHECK_SEED=N replays its choices (the
// operations, their values, which member dies when). Timing still differs between runs.
#include "cluster_nodes.hpp"
#include "network_namespaces.hpp"
#include "register_checks.hpp"
#include "register_client.hpp"
#include "register_history.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using warren::test::free_port;
using warren::test::node_process;
using warren::test::register_op;
using warren::test::temp_dir;
using namespace warren::test::cluster;
using namespace warren::test::register_checks;

namespace {

// The member that `node` names as the metadata log's leader ("" for none, or none reachable).
std::string leader_named_by(const node_process& node) {
  try {
    for (const auto& row : warrenctl_json(node, {"list", "nodes"}))
      if (row["leader"].get<bool>()) return row["name"].get<std::string>();
  } catch (const std::exception&) {
  }
  return {};
}

uint64_t run_seed() {
  if (const char* given = std::getenv("WARREN_CHECK_SEED"))
    return std::strtoull(given, nullptr, 10);
  return std::random_device{}();
}

warren::client::connect_options on_loopback(uint16_t port) {
  warren::client::connect_options o;
  o.port = port;
  return o;
}

struct histories {
  std::vector<register_op> reg;
  std::vector<set_op> sets;
};

// Runs a client on each of `members` while `faults` runs on this thread (a node dies with the
// thread that started it), then stops them: every operation they made, in no particular order.
template <class Faults>
histories history_under(const std::vector<warren::client::connect_options>& members, uint64_t seed,
                        Faults faults) {
  std::vector<std::unique_ptr<register_client>> clients;
  for (size_t i = 0; i < members.size(); ++i)
    clients.push_back(
        std::make_unique<register_client>(members[i], static_cast<int>(i) + 1, seed + i + 1));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back([&c, &stop] { c->run(stop); });
  auto stop_clients = [&] {
    stop = true;
    for (auto& t : threads) t.join();
  };
  try {
    faults();
  } catch (...) {  // a failed requirement: the clients stop before the test unwinds
    stop_clients();
    throw;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop_clients();
  histories out;
  for (const auto& c : clients) {
    out.reg.insert(out.reg.end(), c->history.begin(), c->history.end());
    out.sets.insert(out.sets.end(), c->sets.begin(), c->sets.end());
  }
  return out;
}

// What every check needs before its clients start: the register's vhost, and the exchange the
// set workload binds from.
void prepare(warren::client::connection& conn) {
  conn.add_vhost("reg");
  conn.open_channel()->exchange_declare(hub, "topic", durable_exchange());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_limit_written_through_every_member_under_kills_is_linearizable) {
  auto seed = run_seed();
  BOOST_TEST_MESSAGE("seed " << seed << " (WARREN_CHECK_SEED=" << seed << " replays it)");
  std::mt19937_64 nemesis(seed);

  std::vector<uint16_t> ports{free_port(), free_port(), free_port()};
  std::vector<std::string> names_of{"a", "b", "c"};
  std::vector<temp_dir> dirs(3);
  std::vector<std::unique_ptr<node_process>> nodes(3);
  std::vector<uint16_t> client_ports{free_port(), free_port(), free_port()};
  auto start = [&](size_t i) {
    auto args = cluster_args(names_of[i], ports[i], i == 0 ? std::string() : address(ports[0]));
    args.insert(args.end(), {"--port", std::to_string(client_ports[i])});
    nodes[i] = std::make_unique<node_process>(args, dirs[i].path());
  };
  for (size_t i = 0; i < 3; ++i) start(i);
  BOOST_REQUIRE(log_voters_seen(*nodes[0], {"a", "b", "c"}));
  prepare(*connect(*nodes[0]));
  std::vector<warren::client::connect_options> members;
  for (const auto& node : nodes) members.push_back(on_loopback(node->port()));

  // Four rounds of a member killed and, a moment later, started again on its data; the leader
  // in odd rounds, a random member in even ones.
  auto history = history_under(members, seed, [&] {
    for (int round = 0; round < 4; ++round) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(800, 2000)(nemesis)));
      auto victim = std::uniform_int_distribution<size_t>(0, 2)(nemesis);
      if (round % 2 == 1) {
        auto leader = leader_named_by(*nodes[(victim + 1) % 3]);
        for (size_t i = 0; i < 3; ++i)
          if (names_of[i] == leader) victim = i;
      }
      BOOST_TEST_MESSAGE("round " << round << ": kill -9 " << names_of[victim]
                                  << (round % 2 == 1 ? " (named the leader)" : ""));
      nodes[victim]->kill9();
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(500, 2500)(nemesis)));
      nodes[victim].reset();
      start(victim);
    }
  });
  check_linearizable(history.reg, seed);
  check_members_agree(members);
  check_sets(members, history.sets);
}

namespace {

enum class partition { isolate_leader, isolate_one, bridge, split };

const char* describe(partition p) {
  switch (p) {
    case partition::isolate_leader:
      return "the leader cut off";
    case partition::isolate_one:
      return "one member cut off, killed -9 and restarted while cut off";
    case partition::bridge:
      return "a bridge (two members cut from each other, both see the others)";
    case partition::split:
      return "a split of two members from the rest";
  }
  return "";
}

// Each kind once (a split only with five or more members), then one more drawn, in a drawn
// order.
std::vector<partition> partition_rounds(std::mt19937_64& nemesis, int members) {
  int kinds = members >= 5 ? 4 : 3;
  std::vector<partition> rounds;
  for (int k = 0; k < kinds; ++k) rounds.push_back(static_cast<partition>(k));
  rounds.push_back(
      static_cast<partition>(std::uniform_int_distribution<int>(0, kinds - 1)(nemesis)));
  std::shuffle(rounds.begin(), rounds.end(), nemesis);
  return rounds;
}

// Who `member` names as the log's leader, by index into `names_of` (-1: none, or unreachable).
int leader_of(const warren::client::connect_options& member,
              const std::vector<std::string>& names_of) {
  try {
    for (const auto& row : warren::client::connection::open(member)->list_nodes())
      if (row.leader)
        for (size_t i = 0; i < names_of.size(); ++i)
          if (names_of[i] == row.name) return static_cast<int>(i);
  } catch (const std::exception&) {
  }
  return -1;
}

// Polls until every member sees every member running and voting in the log: the cut is healed
// at the cluster link too. A minute is a guard against hanging, not a speed expectation.
bool all_see_all(const std::vector<warren::client::connect_options>& members) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    try {
      for (const auto& member : members) {
        size_t running = 0;
        for (const auto& row : warren::client::connection::open(member)->list_nodes())
          running += row.running && row.voter ? 1 : 0;
        all = all && running == members.size();
      }
    } catch (const std::exception&) {
      all = false;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Changes through a member cut off from the others until one is refused for want of a quorum:
// the refusal's message. A minority must refuse within a bounded time, never accept: an accepted
// change ends the probe too, as does a minute without a refusal (a guard, not a speed test).
// "Outcome unknown" (the change was in flight to a leader when the cut came) is tried again.
std::string minority_answer(const warren::client::connect_options& member, int round) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  for (int attempt = 0; std::chrono::steady_clock::now() < deadline; ++attempt) {
    auto refusal = refusal_of([&] {
      warren::client::connection::open(member)->add_vhost("cut-" + std::to_string(round) + "-" +
                                                          std::to_string(attempt));
    });
    if (refusal.empty()) return "accepted a change while cut off";
    if (refusal.find("no quorum") != std::string::npos) return refusal;
  }
  return "no refusal within a minute";
}

// The members a round cuts off from the majority (for a bridge: none; its two members are
// cut from each other only), drawn.
std::vector<int> minority_of(partition kind, int chosen, int leader, int members,
                             std::mt19937_64& nemesis) {
  if (kind == partition::bridge) return {};
  if (kind == partition::isolate_leader) return {leader >= 0 ? leader : chosen};
  if (kind == partition::isolate_one) return {chosen};
  // A split: two members, the leader among them every other time.
  int first =
      leader >= 0 && std::uniform_int_distribution<int>(0, 1)(nemesis) == 0 ? leader : chosen;
  int second = (first + 1 + std::uniform_int_distribution<int>(0, members - 2)(nemesis)) % members;
  return {first, second};
}

// Every link between `side` and the other members is cut.
bool cut_off(warren::test::namespace_net& net, const std::vector<int>& side, int members) {
  bool ok = true;
  for (int m = 0; m < members; ++m)
    if (std::find(side.begin(), side.end(), m) == side.end())
      for (int s : side) ok = ok && net.cut(s, m);
  return ok;
}

// The register and the set, with `n` members in network namespaces (addresses 10.`block`.x.y)
// whose links are cut and healed: the leader cut off, another member cut off (and killed -9
// and restarted while cut off), a bridge, and with five members a split of two from three.
// Clients keep their member across a cut. A member cut off from the majority must, before the
// cut heals, refuse a change naming "no quorum" (minority_answer), not accept one.
void check_under_partitions(int n, int block) {
  auto seed = run_seed();
  BOOST_TEST_MESSAGE("seed " << seed << " (WARREN_CHECK_SEED=" << seed << " replays it)");
  std::mt19937_64 nemesis(seed);
  warren::test::namespace_net net(n, block);
  BOOST_REQUIRE_MESSAGE(net.usable(), "could not make the network namespaces");

  std::vector<uint16_t> ports, client_ports;
  std::vector<std::string> names_of;
  for (int i = 0; i < n; ++i) {
    ports.push_back(free_port());
    client_ports.push_back(free_port());
    names_of.push_back(std::string(1, static_cast<char>('a' + i)));
  }
  std::vector<temp_dir> dirs(n);
  {
    // Only loopback logins may be guest's: the clients come from the bridge as an administrator.
    node_process seeding({}, dirs[0].path());
    auto conn = connect(seeding);
    conn->add_user("ops", "ops-secret", {"administrator"});
    conn->set_permissions({"ops", "/", ".*", ".*", ".*"});
  }
  std::vector<std::unique_ptr<node_process>> nodes(n);
  auto start = [&](int i) {
    auto join = i == 0 ? std::string() : net.address(0) + ":" + std::to_string(ports[0]);
    auto args = cluster_args(names_of[i], ports[i], join);
    args.insert(args.end(), {"--bind", net.address(i), "--cluster-bind", net.address(i), "--port",
                             std::to_string(client_ports[i])});
    nodes[i] = std::make_unique<node_process>(args, dirs[i].path(), net.inside(i));
  };
  for (int i = 0; i < n; ++i) start(i);
  std::vector<warren::client::connect_options> members;
  for (int i = 0; i < n; ++i) {
    warren::client::connect_options o;
    o.host = net.address(i);
    o.port = nodes[i]->port();
    o.user = "ops";
    o.password = "ops-secret";
    members.push_back(o);
  }
  BOOST_REQUIRE(all_see_all(members));
  prepare(*warren::client::connection::open(members[0]));

  auto history = history_under(members, seed, [&] {
    int round = -1;
    for (auto kind : partition_rounds(nemesis, n)) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(800, 2000)(nemesis)));
      auto chosen = std::uniform_int_distribution<int>(0, n - 1)(nemesis);
      auto leader = leader_of(members[chosen], names_of);
      auto minority = minority_of(kind, chosen, leader, n, nemesis);
      ++round;
      auto other = (chosen + 1 + std::uniform_int_distribution<int>(0, n - 2)(nemesis)) % n;
      std::string who;
      for (int m : kind == partition::bridge ? std::vector<int>{chosen, other} : minority)
        who += (who.empty() ? "" : ", ") + names_of[m];
      BOOST_TEST_MESSAGE("round " << round << ": " << describe(kind) << ": " << who);
      BOOST_REQUIRE(kind == partition::bridge ? net.cut(chosen, other) : cut_off(net, minority, n));
      auto hold =
          std::chrono::milliseconds(std::uniform_int_distribution<int>(3000, 6000)(nemesis));
      if (kind == partition::isolate_one) {
        // It must start (and refuse changes) though no other member can be reached.
        std::this_thread::sleep_for(hold / 2);
        nodes[chosen]->kill9();
        nodes[chosen].reset();
        start(chosen);
      }
      std::this_thread::sleep_for(hold);
      for (int m : minority) {
        auto answer = minority_answer(members[m], round);
        BOOST_TEST_MESSAGE("  " << names_of[m] << ", cut off: " << answer);
        BOOST_CHECK_MESSAGE(answer.find("no quorum") != std::string::npos,
                            names_of[m] << ", cut off: " << answer);
      }
      BOOST_REQUIRE(net.heal());
      BOOST_REQUIRE_MESSAGE(all_see_all(members), "the members did not meet again after the cut");
    }
  });
  check_linearizable(history.reg, seed);
  check_members_agree(members);
  check_sets(members, history.sets);
}

bool namespaces_usable(boost::unit_test::test_unit_id) {
  return warren::test::network_namespaces_usable();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_limit_written_through_every_member_under_partitions_is_linearizable,
                     *boost::unit_test::precondition(namespaces_usable)) {
  check_under_partitions(3, 214);
}

BOOST_AUTO_TEST_CASE(five_members_under_partitions_stay_linearizable_and_agree,
                     *boost::unit_test::precondition(namespaces_usable)) {
  check_under_partitions(5, 215);
}
