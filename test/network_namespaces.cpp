#include "network_namespaces.hpp"

#include "subprocess.hpp"

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <sstream>

namespace warren::test {

namespace {

const std::string ip_tool = "/usr/sbin/ip";
const std::string nft_tool = "/usr/sbin/nft";
const std::string table = "warren_cuts";

bool run(std::vector<std::string> argv, bool report = true) {
  auto r = run_command(argv);
  if (r.exit_code != 0 && report)
    BOOST_TEST_MESSAGE(argv[0] << " " << argv[1] << " ...: " << r.err);
  return r.exit_code == 0;
}

bool ip(std::vector<std::string> args, bool report = true) {
  args.insert(args.begin(), ip_tool);
  return run(std::move(args), report);
}

// The devices of this namespace with an address in `prefix` (`ip -o addr show to PREFIX`: the
// second field of each line).
std::vector<std::string> devices_holding(const std::string& prefix) {
  auto r = run_command({ip_tool, "-o", "addr", "show", "to", prefix});
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string index, device;
    if (fields >> index >> device) out.push_back(device);
  }
  return out;
}

}  // namespace

bool network_namespaces_usable() {
  return getuid() == 0 && access(ip_tool.c_str(), X_OK) == 0 && access(nft_tool.c_str(), X_OK) == 0;
}

namespace_net::namespace_net(int members, int block) {
  // A count of its own for each net of this process: a namespace's deletion takes its veth pair
  // along only later (asynchronously), so the next test case's net must not reuse the names.
  static std::atomic<int> made{0};
  auto tag = std::to_string(getpid() % 100000) + "c" + std::to_string(made++ % 100);
  auto subnet = "10." + std::to_string(block) + "." + std::to_string(getpid() % 250) + ".";
  bridge_ = "wbr" + tag;
  for (int i = 0; i < members; ++i) {
    namespaces_.push_back("warren-" + tag + "-" + std::to_string(i));
    devices_.push_back("wv" + tag + "n" + std::to_string(i));
    addresses_.push_back(subnet + std::to_string(i + 1));
  }
  // Left behind by an earlier run of this pid that was killed, and a bridge of any killed run
  // that holds this subnet (its route would take our clients' packets).
  for (const auto& ns : namespaces_) ip({"netns", "del", ns}, false);
  ip({"link", "del", bridge_}, false);
  for (const auto& stale : devices_holding(subnet + "0/24")) ip({"link", "del", stale}, false);

  // Not through the host's firewall (bridge-nf): a host whose FORWARD policy drops (Docker's)
  // would cut every member off.
  usable_ = ip({"link", "add", bridge_, "type", "bridge", "nf_call_iptables", "0",
                "nf_call_ip6tables", "0", "nf_call_arptables", "0"}) &&
            ip({"addr", "add", subnet + "254/24", "dev", bridge_}) &&
            ip({"link", "set", bridge_, "up"});
  for (int i = 0; usable_ && i < members; ++i) {
    const auto& ns = namespaces_[i];
    const auto& dev = devices_[i];
    auto bridge_end = "wh" + tag + "n" + std::to_string(i);
    usable_ =
        ip({"netns", "add", ns}) &&
        ip({"link", "add", dev, "type", "veth", "peer", "name", bridge_end}) &&
        ip({"link", "set", dev, "netns", ns}) &&
        ip({"link", "set", bridge_end, "master", bridge_}) &&
        ip({"link", "set", bridge_end, "up"}) &&
        ip({"-n", ns, "addr", "add", addresses_[i] + "/24", "dev", dev}) &&
        ip({"-n", ns, "link", "set", "lo", "up"}) && ip({"-n", ns, "link", "set", dev, "up"}) &&
        in_member(i, {"add", "table", "inet", table}) &&
        in_member(
            i, {"add", "chain", "inet", table, "in", "{ type filter hook input priority 0 ; }"}) &&
        in_member(
            i, {"add", "chain", "inet", table, "out", "{ type filter hook output priority 0 ; }"});
  }
}

namespace_net::~namespace_net() {
  for (const auto& ns : namespaces_) ip({"netns", "del", ns});  // takes each veth pair along
  ip({"link", "del", bridge_});
}

std::vector<std::string> namespace_net::inside(int member) const {
  return {ip_tool, "netns", "exec", namespaces_[member]};
}

bool namespace_net::in_member(int member, const std::vector<std::string>& nft_args) {
  auto argv = inside(member);
  argv.push_back(nft_tool);
  argv.insert(argv.end(), nft_args.begin(), nft_args.end());
  return run(std::move(argv));
}

bool namespace_net::cut(int a, int b) {
  // Rules on a's side alone cut the pair: nothing of b's gets in, nothing for b gets out.
  return in_member(a, {"add", "rule", "inet", table, "in", "ip", "saddr", address(b), "drop"}) &&
         in_member(a, {"add", "rule", "inet", table, "out", "ip", "daddr", address(b), "drop"});
}

bool namespace_net::isolate(int member) {
  bool done = true;
  for (int other = 0; other < size(); ++other)
    if (other != member) done = cut(member, other) && done;
  return done;
}

bool namespace_net::heal() {
  bool done = true;
  for (int i = 0; i < size(); ++i)
    done = in_member(i, {"flush", "chain", "inet", table, "in"}) &&
           in_member(i, {"flush", "chain", "inet", table, "out"}) && done;
  return done;
}

}  // namespace warren::test
