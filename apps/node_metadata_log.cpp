#include "apps/node_metadata_log.hpp"

#include "apps/local_data.hpp"
#include "core/log.hpp"
#include "persistence/raft_frame.hpp"

#include <filesystem>
#include <stdexcept>

namespace warren::node {

namespace fs = std::filesystem;
using stage = persistence::lmdb_store::log_identity::stage;

namespace {

std::string raft_dir_of(const std::string& data_dir) {
  return (fs::path(data_dir) / "raft").string();
}

}  // namespace

log_start decide_log_start(const log_facts& f, const std::string& data_dir) {
  if (!f.clustered) return log_start::none;
  auto raft_dir = raft_dir_of(data_dir);
  const auto& id = f.identity;
  if (id.at != stage::none && id.node != f.self)
    throw std::runtime_error(
        raft_dir + " holds the metadata log of node '" + id.node + "', and this node is named '" +
        f.self + "': under another name it would vote with another raft id. Start it with " +
        "--node-name " + id.node + ", or move " + data_dir + " aside and join as a new node");
  if (f.folder && id.at == stage::open && !f.raft_state)
    throw std::runtime_error(
        raft_dir + " holds no raft state, but this node's metadata log had a term there: " +
        "opened empty it would vote again in terms it voted in, and could elect a second " +
        "leader. Restore the folder's files from a backup; or forget this node on the cluster " +
        "(warrenctl forget-node " + f.self + "), move " + data_dir +
        " aside and start it again with --join");
  // A founding cut short after an empty joiner's folder was there (a founder chosen at run time
  // replaces its joiner's log): that folder never held a term, and is made again as a founder's.
  if (f.folder && id.at == stage::founding && !f.raft_state) return log_start::found;
  if (f.folder) return log_start::open;
  // A node that never had members voted alone: a new log can disagree with no one.
  if (id.at == stage::open && f.members.empty() && !f.first_join) return log_start::found;
  if (id.at == stage::open)
    throw std::runtime_error(
        raft_dir + " is missing, but this node's metadata log was there: a new log would vote " +
        "again in terms the lost one voted in, and could elect a second leader. Restore the " +
        "folder from a backup; or forget this node on the cluster (warrenctl forget-node " +
        f.self + "), move " + data_dir + " aside and start it again with --join");
  if (id.at == stage::founding) return log_start::found;
  if (id.at == stage::joining) return log_start::join;
  // Only the first node, started with no one to join, founds. Every other node joins: its empty
  // log waits for the leader to add it. A node deciding from what it learned while joining
  // could found a second log (a member not yet met, a --join address that was itself).
  if (f.members.empty() && !f.first_join) return log_start::found;
  return log_start::join;
}

std::string leave_own_log(persistence::lmdb_store& store, const std::string& data_dir) {
  auto from = fs::path(raft_dir_of(data_dir));
  if (!fs::exists(from)) {
    store.write_log_identity({});
    return {};
  }
  auto to = move_aside_before_join(from.string());
  store.write_log_identity({});
  return to;
}

std::string leave_log_of_former_name(persistence::lmdb_store& store, log_facts& facts,
                                     const std::string& data_dir) {
  if (!facts.clustered || !facts.members.empty() || facts.identity.at == stage::none ||
      facts.identity.node == facts.self)
    return {};
  auto moved = leave_own_log(store, data_dir);
  facts.identity = {};
  facts.folder = false;
  return moved;
}

namespace {

// Raft bootstraps only a folder it makes. One that holds no raft metadata (no term, no vote: an
// empty joiner's) has nothing a log needs, and goes; one that does is never touched here.
void drop_folder_without_term(const std::string& dir) {
  fs::path raft(dir);
  if (!fs::exists(raft) || fs::exists(raft / "metadata1") || fs::exists(raft / "metadata2")) return;
  fs::remove_all(raft);
}

}  // namespace

std::unique_ptr<persistence::metadata_log> start_metadata_log(persistence::lmdb_store& store,
                                                              log_start how,
                                                              const log_settings& settings) {
  auto id = store.read_log_identity();
  if (how == log_start::found) drop_folder_without_term(raft_dir_of(settings.data_dir));
  if (how == log_start::found || how == log_start::join) {
    auto intent = how == log_start::found ? stage::founding : stage::joining;
    if (id.at != intent || id.node != settings.self)
      store.write_log_identity({intent, settings.self});
  }
  persistence::metadata_log::options o;
  o.dir = raft_dir_of(settings.data_dir);
  o.id = persistence::raft_id_of(settings.self);
  o.address = settings.self;
  o.joining = how == log_start::join;
  o.send = settings.send;
  o.election_timeout_ms = settings.election_timeout_ms;
  o.quorum_timeout_ms = settings.quorum_timeout_ms;
  o.on_change = settings.on_change;
  // A joiner's log counts as opened once it holds a term: before that it has never voted, and
  // an emptied folder is as good as a new one.
  o.on_first_term = [&store, self = settings.self] {
    try {
      if (store.read_log_identity().at != stage::open)
        store.write_log_identity({stage::open, self});
    } catch (const std::exception& e) {
      warren::log(warren::log_level::error, "cluster",
                  std::string("cannot record that the metadata log holds a term: ") + e.what());
    }
  };
  auto log = std::make_unique<persistence::metadata_log>(store, o);
  if (how == log_start::found && store.read_log_identity().at != stage::open)
    store.write_log_identity({stage::open, settings.self});
  return log;
}

}  // namespace warren::node
