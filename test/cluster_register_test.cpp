// A Jepsen-style check of the metadata log on real warren-node processes (issue 33): one register,
// vhost "reg"'s max-queues limit, written and read by a client on every member while members
// are killed (-9) and restarted, must be linearizable (test/register_history.*). Reads go
// through sync_metadata (a plain read is local and may be stale by design). After healing,
// every member holds the last value.
//
// A run is drawn from a seed, printed at the start; WARREN_CHECK_SEED=N replays its choices (the
// operations, their values, which member dies when). Timing still differs between runs.
#include "cluster_nodes.hpp"
#include "network_namespaces.hpp"
#include "register_history.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using warren::test::check_register;
using warren::test::free_port;
using warren::test::node_process;
using warren::test::register_op;
using warren::test::register_verdict;
using warren::test::temp_dir;
using namespace warren::test::cluster;

namespace {

using outcome = register_op::outcome;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

// How a refused write ended: refused before the log took it ("no quorum: ..." is said only
// before an entry reaches raft), or perhaps made (anything else: a lost connection, a leader
// that stepped down with the entry in flight, a timeout).
outcome write_refusal(const std::string& error) {
  return error.find("no quorum") != std::string::npos ? outcome::failed : outcome::unknown;
}

// One client, on one member: random reads and writes (values unique to it) until `stop`.
class register_client {
 public:
  register_client(warren::client::connect_options to, int index, uint64_t seed)
      : to_(std::move(to)), index_(index) {
    rng_.seed(seed);
  }

  void run(const std::atomic<bool>& stop) {
    for (int i = 1; !stop; ++i) {
      if (!connected()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (std::uniform_int_distribution<int>(0, 1)(rng_) == 0)
        write(index_ * 1'000'000 + i);
      else
        read();
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 30)(rng_)));
    }
  }

  std::vector<register_op> history;

 private:
  bool connected() {
    if (conn_) return true;
    try {
      conn_ = warren::client::connection::open(to_);
      return true;
    } catch (const std::exception&) {
      return false;  // the member is down: no operation was made
    }
  }

  void write(int64_t value) {
    register_op op{register_op::kind::write, value, now_ns(), 0, outcome::ok, name()};
    try {
      conn_->set_vhost_limits("reg", {-1, value});
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      conn_.reset();
    }
    op.ended = now_ns();
    history.push_back(op);
  }

  void read() {
    register_op op{register_op::kind::read, 0, now_ns(), 0, outcome::ok, name()};
    try {
      conn_->sync_metadata();
      op.value = conn_->get_vhost_limits("reg").max_queues;
    } catch (const std::exception&) {
      op.result = outcome::unknown;  // says nothing; the checker drops it
      conn_.reset();
    }
    op.ended = now_ns();
    history.push_back(op);
  }

  std::string name() const { return "client of " + to_.host + ":" + std::to_string(to_.port); }

  warren::client::connect_options to_;
  int index_;
  std::mt19937_64 rng_;
  std::unique_ptr<warren::client::connection> conn_;
};

warren::client::connect_options on_loopback(uint16_t port) {
  warren::client::connect_options o;
  o.port = port;
  return o;
}

// Runs a client on each of `members` while `faults` runs on this thread (a node dies with the
// thread that started it), then stops them: every operation they made, in no particular order.
template <class Faults>
std::vector<register_op> history_under(const std::vector<warren::client::connect_options>& members,
                                       uint64_t seed, Faults faults) {
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
  std::vector<register_op> history;
  for (const auto& c : clients) history.insert(history.end(), c->history.begin(), c->history.end());
  return history;
}

void check_linearizable(const std::vector<register_op>& history, uint64_t seed) {
  size_t writes_ok = 0, reads_ok = 0, refused = 0, unknown = 0;
  for (const auto& op : history) {
    if (op.result == outcome::ok) ++(op.what == register_op::kind::write ? writes_ok : reads_ok);
    if (op.result == outcome::failed) ++refused;
    if (op.result == outcome::unknown) ++unknown;
  }
  BOOST_TEST_MESSAGE(history.size()
                     << " operations: " << writes_ok << " writes and " << reads_ok
                     << " reads answered, " << refused << " writes refused (no quorum), " << unknown
                     << " of unknown outcome");
  BOOST_TEST(writes_ok > 0u);
  BOOST_TEST(reads_ok > 0u);
  auto verdict = check_register(history, -1);
  BOOST_TEST((verdict.what == register_verdict::kind::linearizable),
             "seed " << seed << ": " << verdict.explanation);
}

// Healed: every member holds the same value, the one a linearizable read gives.
void check_members_agree(const std::vector<warren::client::connect_options>& members) {
  auto first = warren::client::connection::open(members.front());
  first->sync_metadata();
  auto value = first->get_vhost_limits("reg").max_queues;
  for (const auto& member : members) {
    auto conn = warren::client::connection::open(member);
    conn->sync_metadata();
    BOOST_TEST(conn->get_vhost_limits("reg").max_queues == value,
               member.host << ":" << member.port);
  }
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
  connect(*nodes[0])->add_vhost("reg");
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
  check_linearizable(history, seed);
  check_members_agree(members);
}

namespace {

enum class partition { isolate_leader, isolate_one, bridge };

const char* describe(partition p) {
  switch (p) {
    case partition::isolate_leader:
      return "the leader cut off";
    case partition::isolate_one:
      return "one member cut off";
    case partition::bridge:
      return "a bridge (two members cut from each other, both see the third)";
  }
  return "";
}

// Each kind once, then two more drawn, in a drawn order.
std::vector<partition> partition_rounds(std::mt19937_64& nemesis) {
  std::vector<partition> rounds{partition::isolate_leader, partition::isolate_one,
                                partition::bridge};
  for (int extra = 0; extra < 2; ++extra)
    rounds.push_back(static_cast<partition>(std::uniform_int_distribution<int>(0, 2)(nemesis)));
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

}  // namespace

// The same register, with members in network namespaces whose links are cut and healed: the
// leader cut off, another member cut off (and killed -9 and restarted while cut off), and a
// bridge. Clients keep their member across a cut. A member cut off must, before the cut
// heals, refuse a change naming "no quorum" (minority_answer), not accept one.
BOOST_AUTO_TEST_CASE(a_limit_written_through_every_member_under_partitions_is_linearizable,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       return warren::test::network_namespaces_usable();
                     })) {
  auto seed = run_seed();
  BOOST_TEST_MESSAGE("seed " << seed << " (WARREN_CHECK_SEED=" << seed << " replays it)");
  std::mt19937_64 nemesis(seed);
  warren::test::namespace_net net(3, 214);
  BOOST_REQUIRE_MESSAGE(net.usable(), "could not make the network namespaces");

  std::vector<uint16_t> ports{free_port(), free_port(), free_port()};
  std::vector<std::string> names_of{"a", "b", "c"};
  std::vector<temp_dir> dirs(3);
  {
    // Only loopback logins may be guest's: the clients come from the bridge as an administrator.
    node_process seeding({}, dirs[0].path());
    auto conn = connect(seeding);
    conn->add_user("ops", "ops-secret", {"administrator"});
    conn->set_permissions({"ops", "/", ".*", ".*", ".*"});
  }
  std::vector<std::unique_ptr<node_process>> nodes(3);
  std::vector<uint16_t> client_ports{free_port(), free_port(), free_port()};
  auto start = [&](int i) {
    auto join = i == 0 ? std::string() : net.address(0) + ":" + std::to_string(ports[0]);
    auto args = cluster_args(names_of[i], ports[i], join);
    args.insert(args.end(), {"--bind", net.address(i), "--cluster-bind", net.address(i), "--port",
                             std::to_string(client_ports[i])});
    nodes[i] = std::make_unique<node_process>(args, dirs[i].path(), net.inside(i));
  };
  for (int i = 0; i < 3; ++i) start(i);
  std::vector<warren::client::connect_options> members;
  for (int i = 0; i < 3; ++i) {
    warren::client::connect_options o;
    o.host = net.address(i);
    o.port = nodes[i]->port();
    o.user = "ops";
    o.password = "ops-secret";
    members.push_back(o);
  }
  BOOST_REQUIRE(all_see_all(members));
  warren::client::connection::open(members[0])->add_vhost("reg");

  auto history = history_under(members, seed, [&] {
    int round = -1;
    for (auto kind : partition_rounds(nemesis)) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(800, 2000)(nemesis)));
      auto chosen = std::uniform_int_distribution<int>(0, 2)(nemesis);
      // A member cut off is also killed and restarted while cut off: it must start (and
      // refuse changes) though no other member can be reached.
      bool kill_too = kind == partition::isolate_one;
      if (kind == partition::isolate_leader) {
        auto leader = leader_of(members[chosen], names_of);
        if (leader >= 0) chosen = leader;
      }
      ++round;
      BOOST_TEST_MESSAGE("round " << round << ": " << describe(kind) << ", " << names_of[chosen]
                                  << (kind == partition::bridge ? " in the middle" : "")
                                  << (kind == partition::isolate_one && kill_too
                                          ? ", killed -9 and restarted while cut off"
                                          : ""));
      if (kind == partition::bridge)
        BOOST_REQUIRE(net.cut((chosen + 1) % 3, (chosen + 2) % 3));
      else
        BOOST_REQUIRE(net.isolate(chosen));
      auto hold =
          std::chrono::milliseconds(std::uniform_int_distribution<int>(3000, 6000)(nemesis));
      if (kind == partition::isolate_one && kill_too) {
        std::this_thread::sleep_for(hold / 2);
        nodes[chosen]->kill9();
        nodes[chosen].reset();
        start(chosen);
      }
      std::this_thread::sleep_for(hold);
      if (kind != partition::bridge) {
        auto answer = minority_answer(members[chosen], round);
        BOOST_TEST_MESSAGE("  " << names_of[chosen] << ", cut off: " << answer);
        BOOST_CHECK_MESSAGE(answer.find("no quorum") != std::string::npos,
                            names_of[chosen] << ", cut off: " << answer);
      }
      BOOST_REQUIRE(net.heal());
      BOOST_REQUIRE_MESSAGE(all_see_all(members), "the members did not meet again after the cut");
    }
  });
  check_linearizable(history, seed);
  check_members_agree(members);
}
