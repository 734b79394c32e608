// A Jepsen-style check of the metadata log on real warren-node processes (issue 33): one register,
// vhost "reg"'s max-queues limit, written and read by a client on every member while members
// are killed (-9) and restarted, must be linearizable (test/register_history.*). Reads go
// through sync_metadata (a plain read is local and may be stale by design). After healing,
// every member holds the last value.
//
// A run is drawn from a seed, printed at the start; WARREN_CHECK_SEED=N replays its choices (the
// operations, their values, which member dies when). Timing still differs between runs.
#include "cluster_nodes.hpp"
#include "register_history.hpp"

#include <boost/test/unit_test.hpp>

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
  register_client(uint16_t port, int index, uint64_t seed) : port_(port), index_(index) {
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
      warren::client::connect_options o;
      o.port = port_;
      conn_ = warren::client::connection::open(o);
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

  std::string name() const { return "client on port " + std::to_string(port_); }

  uint16_t port_;
  int index_;
  std::mt19937_64 rng_;
  std::unique_ptr<warren::client::connection> conn_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_limit_written_through_every_member_under_kills_is_linearizable) {
  auto seed = run_seed();
  BOOST_TEST_MESSAGE("seed " << seed << " (WARREN_CHECK_SEED=" << seed << " replays it)");
  std::mt19937_64 nemesis(seed);

  std::vector<uint16_t> ports{free_port(), free_port(), free_port()};
  std::vector<std::string> names_of{"a", "b", "c"};
  std::vector<temp_dir> dirs(3);
  std::vector<std::unique_ptr<node_process>> nodes(3);
  auto start = [&](size_t i) {
    nodes[i] = std::make_unique<node_process>(
        cluster_args(names_of[i], ports[i], i == 0 ? std::string() : address(ports[0])),
        dirs[i].path());
  };
  for (size_t i = 0; i < 3; ++i) start(i);
  BOOST_REQUIRE(log_voters_seen(*nodes[0], {"a", "b", "c"}));
  connect(*nodes[0])->add_vhost("reg");

  std::vector<std::unique_ptr<register_client>> clients;
  for (size_t i = 0; i < 3; ++i)
    clients.push_back(
        std::make_unique<register_client>(nodes[i]->port(), static_cast<int>(i) + 1, seed + i + 1));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back([&c, &stop] { c->run(stop); });

  // Faults, on this thread (a node dies with the thread that started it): four rounds of a
  // member killed and, a moment later, started again on its data; the leader in odd rounds, a
  // random member in even ones.
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
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  for (auto& t : threads) t.join();

  std::vector<register_op> history;
  size_t writes_ok = 0, reads_ok = 0;
  for (const auto& c : clients)
    for (const auto& op : c->history) {
      history.push_back(op);
      if (op.result == outcome::ok) ++(op.what == register_op::kind::write ? writes_ok : reads_ok);
    }
  BOOST_TEST_MESSAGE(history.size() << " operations: " << writes_ok << " writes and " << reads_ok
                                    << " reads answered");
  BOOST_TEST(writes_ok > 0u);
  BOOST_TEST(reads_ok > 0u);
  auto verdict = check_register(history, -1);
  BOOST_TEST((verdict.what == register_verdict::kind::linearizable),
             "seed " << seed << ": " << verdict.explanation);

  // Healed: every member holds the same value, the one a linearizable read gives.
  auto last = connect(*nodes[0]);
  last->sync_metadata();
  auto value = last->get_vhost_limits("reg").max_queues;
  for (const auto& node : nodes) {
    auto conn = connect(*node);
    conn->sync_metadata();
    BOOST_TEST(conn->get_vhost_limits("reg").max_queues == value, "port " << node->port());
  }
}
