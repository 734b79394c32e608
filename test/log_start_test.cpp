// decide_log_start (issue 33): how a warren-node's metadata log starts, for every kind of data
// dir it can find. The refusals matter most: a member that made a second log could vote twice in
// one term and elect a second leader. The processes themselves: cluster_metadata_log_test.
#include "apps/node_metadata_log.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>

using warren::node::decide_log_start;
using warren::node::log_facts;
using warren::node::log_start;
using stage = warren::persistence::lmdb_store::log_identity::stage;

namespace {

const std::string data_dir = "/data";

log_facts clustered(const std::string& self = "b") {
  log_facts f;
  f.self = self;
  f.clustered = true;
  return f;
}

log_facts with_identity(log_facts f, stage at, const std::string& node) {
  f.identity.at = at;
  f.identity.node = node;
  return f;
}

// The message decide_log_start refuses with, "" when it does not.
std::string refusal(const log_facts& f) {
  try {
    decide_log_start(f, data_dir);
    return {};
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_standalone_node_keeps_no_log_whatever_its_data_dir_holds) {
  log_facts f;
  f.self = "b";
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::none);
  f = with_identity(f, stage::open, "other");  // even a log of another name: it is not used
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::none);
}

BOOST_AUTO_TEST_CASE(a_folder_of_this_node_opens) {
  auto f = with_identity(clustered(), stage::open, "b");
  f.folder = true;
  f.raft_state = true;
  f.members = {"a", "c"};
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::open);
}

BOOST_AUTO_TEST_CASE(a_log_of_another_node_name_is_refused_naming_both) {
  auto f = with_identity(clustered("z"), stage::open, "b");
  f.folder = true;
  f.members = {"a"};
  auto why = refusal(f);
  BOOST_CHECK_MESSAGE(
      why.find("/data/raft holds the metadata log of node 'b'") != std::string::npos, why);
  BOOST_CHECK_MESSAGE(why.find("this node is named 'z'") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_lost_folder_of_a_member_is_refused_and_of_a_lone_node_founds_again) {
  auto f = with_identity(clustered(), stage::open, "b");
  f.members = {"a"};
  auto why = refusal(f);
  BOOST_CHECK_MESSAGE(why.find("/data/raft is missing") != std::string::npos, why);
  BOOST_CHECK_MESSAGE(why.find("warrenctl forget-node b") != std::string::npos, why);
  f.members.clear();  // it only ever voted alone
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::found);
}

// An emptied folder of a log that held a term would open as a new member that never voted.
BOOST_AUTO_TEST_CASE(an_emptied_folder_of_a_log_that_held_a_term_is_refused) {
  auto f = with_identity(clustered(), stage::open, "b");
  f.folder = true;
  f.members = {"a"};
  auto why = refusal(f);
  BOOST_CHECK_MESSAGE(why.find("/data/raft holds no raft state") != std::string::npos, why);
  f.raft_state = true;
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::open);
  // A joiner that never held a term never voted: its empty folder opens.
  f = with_identity(clustered(), stage::joining, "b");
  f.folder = true;
  f.members = {"a"};
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::open);
}

BOOST_AUTO_TEST_CASE(an_intent_recorded_before_a_crash_is_finished) {
  auto f = with_identity(clustered(), stage::founding, "b");
  f.members = {"a"};
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::found);
  f = with_identity(clustered(), stage::joining, "b");
  f.members = {"a"};
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::join);
}

// A founder chosen at run time replaces its empty joiner's log: cut short, the folder it left
// (no term in it) is made again as a founder's; one that holds raft state opens as it is.
BOOST_AUTO_TEST_CASE(a_founding_cut_short_over_an_empty_joiners_folder_founds_again) {
  auto f = with_identity(clustered(), stage::founding, "b");
  f.members = {"a", "c"};
  f.folder = true;
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::found);
  f.raft_state = true;
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::open);
  f = with_identity(clustered(), stage::joining, "b");  // a joiner's folder stays a joiner's
  f.members = {"a", "c"};
  f.folder = true;
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::open);
}

// Only the first node founds; a node that joins, or has members, never decides to found from
// what it learned while joining (which can be partial), and waits to be added instead.
BOOST_AUTO_TEST_CASE(only_the_first_node_founds_and_every_other_joins) {
  auto f = clustered();
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::found);
  f.first_join = true;
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::join);
  f = clustered("0");  // even the lowest name, in a cluster made before the log existed
  f.members = {"a", "c"};
  BOOST_CHECK(decide_log_start(f, data_dir) == log_start::join);
}
