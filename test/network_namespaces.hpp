// Network partitions for tests of real cluster nodes: each member runs in a network namespace
// of its own, all joined by one bridge in the test's namespace (which reaches every member, so
// clients keep their member while members lose each other). A cut between two members is a pair
// of nftables rules that silently drop their packets, as a failed switch port would: no socket
// is told, and each side notices only by its own timeouts.
#pragma once

#include <string>
#include <vector>

namespace warren::test {

/// Whether this test can make namespaces and rules: root, with ip (iproute2) and nft (nftables).
bool network_namespaces_usable();

class namespace_net {
 public:
  /// `members` namespaces (10.<block>.<tag>.1, .2, ...) on a bridge at .254, made for one test
  /// and removed with it. Names and addresses carry the test's pid, so that runs on one machine
  /// do not meet; a run killed at its timeout leaves its namespaces, and the next run of that
  /// pid removes them. `block` keeps tests that may run at once apart (10.<block>.x.x).
  namespace_net(int members, int block);
  ~namespace_net();
  namespace_net(const namespace_net&) = delete;
  namespace_net& operator=(const namespace_net&) = delete;

  bool usable() const { return usable_; }
  int size() const { return static_cast<int>(namespaces_.size()); }
  const std::string& address(int member) const { return addresses_[member]; }
  /// What runs a program inside member `i`'s namespace.
  std::vector<std::string> inside(int member) const;

  /// Drops every packet between members `a` and `b`, both ways.
  bool cut(int a, int b);
  /// Cuts `member` off from every other member.
  bool isolate(int member);
  /// Removes every cut.
  bool heal();

 private:
  bool in_member(int member, const std::vector<std::string>& nft_args);

  std::vector<std::string> namespaces_, devices_, addresses_;
  std::string bridge_;
  bool usable_ = false;
};

}  // namespace warren::test
