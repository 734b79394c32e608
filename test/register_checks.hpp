// The checks of the Jepsen-style test of the metadata log (cluster_register_test.cpp), once its
// clients stopped and every cut is healed: the register's history is linearizable, every member
// holds the same value and the same log state, and the set workload's adds and deletes are
// there, or not, as their answers say.
#pragma once

#include "register_history.hpp"

#include <warren/connection.hpp>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace warren::test::register_checks {

using outcome = register_op::outcome;

// The durable exchange (in vhost "/") the set workload binds to its clients' exchanges.
const std::string hub = "hub";

// One add or delete of a user, a vhost, a durable exchange or durable queue (in vhost "/") or a
// binding from "hub" to one of those exchanges (named by its key) by the set workload, as its
// client saw it end.
struct set_op {
  enum class kind { add, remove } what;
  enum class of { user, vhost, exchange, binding, queue } thing;
  std::string name;
  outcome result;
  std::string detail;  // for a failure's message: a binding's exchange, when it ended
};

void check_linearizable(const std::vector<register_op>& history, uint64_t seed);

/// A connection to `members[which]` once it has applied everything the log committed; fails the
/// test if it has not caught up two minutes after the heal.
std::unique_ptr<warren::client::connection> synced(
    const std::vector<warren::client::connect_options>& members, size_t which);

/// Every member holds the same value, the one a linearizable read gives.
void check_members_agree(const std::vector<warren::client::connect_options>& members);

/// Every member holds the same users, vhosts, permissions, durable exchanges, bindings between
/// them and durable queues (each on one node, no name twice), and the set workload's are as
/// their answers say.
void check_sets(const std::vector<warren::client::connect_options>& members,
                const std::vector<set_op>& ops);

}  // namespace warren::test::register_checks
