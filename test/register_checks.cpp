#include "register_checks.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <thread>

namespace warren::test::register_checks {

namespace {

// The last log index `member` applied (0 if it cannot tell), for a failure's message.
uint64_t applied_on(const warren::client::connect_options& member) {
  try {
    for (const auto& row : warren::client::connection::open(member)->list_nodes())
      if (row.local) return row.metadata_log_applied;
  } catch (const std::exception&) {
  }
  return 0;
}

// What the log holds, as `member` lists it after a sync (every committed change applied there).
struct log_state {
  std::set<std::string> users, vhosts, permissions, exchanges, bindings;
  std::map<std::string, std::string> queues;  // durable, of vhost "/": name -> its node
  std::vector<std::string> listed_twice;      // durable queue names listed more than once
  bool operator==(const log_state& o) const {
    return users == o.users && vhosts == o.vhosts && permissions == o.permissions &&
           exchanges == o.exchanges && bindings == o.bindings && queues == o.queues;
  }
};

log_state log_state_on(const std::vector<warren::client::connect_options>& members, size_t which) {
  auto conn = synced(members, which);
  log_state out;
  for (const auto& u : conn->list_users()) out.users.insert(u.name);
  for (auto& v : conn->list_vhosts()) out.vhosts.insert(std::move(v));
  for (const auto& p : conn->list_permissions())
    out.permissions.insert(p.user + " " + p.vhost + " " + p.configure + " " + p.write + " " +
                           p.read);
  for (const auto& e : conn->list_exchanges())
    if (e.durable) out.exchanges.insert(e.vhost + " " + e.name + " " + e.type);
  for (const auto& b : conn->list_bindings())
    if (b.to_exchange)
      out.bindings.insert(b.vhost + " " + b.exchange + ">" + b.queue + " " + b.key);
  for (const auto& q : conn->list_queues())
    if (q.durable && q.vhost == "/" && !out.queues.emplace(q.name, q.node).second)
      out.listed_twice.push_back(q.name + " (on " + q.node + " and " + out.queues[q.name] + ")");
  return out;
}

// Checks one kind of the set workload against what the members hold: an add that was answered,
// of a name not deleted since (or whose delete was refused for want of a quorum), is there; a
// delete that was answered, or an add refused for want of a quorum, left none; nothing is there
// that no client added. Outcomes unknown may have gone either way. A name's operations are its
// client's, in the order it made them: of two deletes (a binding whose unbind was refused, then
// unbound again or deleted with its exchange), the later decides.
void check_set(const char* what, const std::set<std::string>& all_held,
               const std::vector<set_op>& ops, set_op::of thing) {
  std::map<std::string, std::pair<const set_op*, const set_op*>> by_name;  // add, delete
  size_t answered = 0, refused = 0, unknown = 0;
  for (const auto& op : ops) {
    if (op.thing != thing) continue;
    auto& slot = by_name[op.name];
    (op.what == set_op::kind::add ? slot.first : slot.second) = &op;
    ++(op.result == outcome::ok ? answered : op.result == outcome::failed ? refused : unknown);
  }
  BOOST_TEST_MESSAGE(what << " adds and deletes: " << answered << " answered, " << refused
                          << " refused (no quorum), " << unknown << " of unknown outcome");
  BOOST_TEST(answered > 0u);
  std::set<std::string> held;
  for (const auto& name : all_held)
    if (name.rfind("set-", 0) == 0) held.insert(name);
  std::vector<std::string> wrong;
  for (const auto& name : held)
    if (by_name.count(name) == 0) wrong.push_back(name + " is there, but no client added it");
  for (const auto& [name, ends] : by_name) {
    auto [add, del] = ends;
    bool there = held.count(name) != 0;
    if (del != nullptr && del->result == outcome::ok && there)
      wrong.push_back(name + " is there, though its delete was answered");
    if (add->result == outcome::failed && there)
      wrong.push_back(name + " is there, though its add was refused (no quorum)");
    if (add->result == outcome::ok && (del == nullptr || del->result == outcome::failed) && !there)
      wrong.push_back(name + " is missing, though its add was answered");
  }
  std::string listed;
  for (size_t i = 0; i < wrong.size() && i < 10; ++i) {
    listed += "\n  " + wrong[i];
    auto name = wrong[i].substr(0, wrong[i].find(' '));
    for (const auto& op : ops)
      if (op.thing == thing && op.name == name)
        listed += "\n    " + std::string(op.what == set_op::kind::add ? "add" : "delete") + " " +
                  (op.result == outcome::ok       ? "answered"
                   : op.result == outcome::failed ? "refused"
                                                  : "unknown") +
                  " " + op.detail;
  }
  BOOST_TEST(wrong.empty(), wrong.size() << " " << what << "(s) wrong:" << listed);
}

}  // namespace

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

// A connection to `member` once it has applied everything the log committed. Just healed, a
// member may still be catching up (a member that was cut off, on a busy machine): a sync that
// the member did not apply within the node's own limit is asked again, for two minutes at most,
// a guard against a member that never catches up, not a speed expectation.
std::unique_ptr<warren::client::connection> synced(
    const std::vector<warren::client::connect_options>& members, size_t which) {
  const auto& member = members[which];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  for (;;) {
    try {
      auto conn = warren::client::connection::open(member);
      conn->sync_metadata();
      return conn;
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::string applied;
        for (const auto& m : members) applied += " " + m.host + ":" + std::to_string(applied_on(m));
        BOOST_FAIL(member.host << " did not catch up with the log within two minutes of the "
                               << "heal: " << e.what() << "; applied indexes:" << applied);
      }
      BOOST_TEST_MESSAGE(member.host << " not synced yet: " << e.what());
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

// Healed: every member holds the same value, the one a linearizable read gives.
void check_members_agree(const std::vector<warren::client::connect_options>& members) {
  auto first = synced(members, 0);
  auto value = first->get_vhost_limits("reg").max_queues;
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& member = members[i];
    auto conn = synced(members, i);
    BOOST_TEST(conn->get_vhost_limits("reg").max_queues == value,
               member.host << ":" << member.port);
  }
}

// Healed: every member holds the same users, vhosts, permissions, durable exchanges and bindings
// between them (the whole of what the log carries), and the set workload's are as their answers
// say.
void check_sets(const std::vector<warren::client::connect_options>& members,
                const std::vector<set_op>& ops) {
  auto held = log_state_on(members, 0);
  for (size_t i = 0; i < members.size(); ++i) {
    auto theirs = i == 0 ? held : log_state_on(members, i);
    BOOST_TEST(theirs.listed_twice.empty(),
               members[i].host << " lists two queues of one name: "
                               << (theirs.listed_twice.empty() ? "" : theirs.listed_twice[0]));
    std::string queues_differ;
    for (const auto& [name, node] : theirs.queues)
      if (held.queues.count(name) == 0 || held.queues.at(name) != node)
        queues_differ += " " + name + "@" + node;
    for (const auto& [name, node] : held.queues)
      if (theirs.queues.count(name) == 0) queues_differ += " (lacks " + name + "@" + node + ")";
    BOOST_TEST(queues_differ.empty(),
               members[i].host << " durable queues differ:" << queues_differ);
    BOOST_TEST((theirs == held), members[i].host
                                     << ":" << members[i].port
                                     << " holds other users, vhosts, permissions, durable "
                                     << "exchanges, bindings between them or durable queues than "
                                     << members[0].host << ":" << members[0].port);
  }
  check_set("user", held.users, ops, set_op::of::user);
  check_set("vhost", held.vhosts, ops, set_op::of::vhost);
  std::set<std::string> exchanges_of_root;  // the workload's, by name
  for (const auto& e : held.exchanges)
    if (e.rfind("/ ", 0) == 0) exchanges_of_root.insert(e.substr(2, e.find(' ', 2) - 2));
  check_set("durable exchange", exchanges_of_root, ops, set_op::of::exchange);
  std::set<std::string> hub_bindings;  // by key
  for (const auto& b : held.bindings)
    if (b.rfind("/ " + hub + ">", 0) == 0) hub_bindings.insert(b.substr(b.rfind(' ') + 1));
  check_set("binding", hub_bindings, ops, set_op::of::binding);
  std::set<std::string> queues;
  for (const auto& [name, node] : held.queues) queues.insert(name);
  check_set("durable queue", queues, ops, set_op::of::queue);
}

}  // namespace warren::test::register_checks
