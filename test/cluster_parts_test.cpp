// The cluster's parts: the proofs nodes exchange to show they hold the cluster secret, cluster
// addresses, a vhost's record of queues living on other nodes, what a vhost changes to take a
// member's exchanges and bindings, and an exchange whose queue's node is lost (two actor systems
// in this process, joined over loopback by CAF's middleman).
#include "actors/cluster/cluster_auth.hpp"
#include "actors/cluster/tcp_probe.hpp"
#include "actors/common/message_types.hpp"
#include "actors/routing/exchange_actor.hpp"
#include "actors/vhost/binding_table.hpp"
#include "actors/vhost/remote_queues.hpp"
#include "actors/vhost/topology_view.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace warren;

BOOST_AUTO_TEST_CASE(a_proof_depends_on_secret_purpose_nonce_and_name) {
  auto nonce = make_nonce();
  auto proof = cluster_proof("s3cret", "join", nonce, "a");
  BOOST_CHECK_EQUAL(proof.size(), 64u);  // hex SHA-256
  BOOST_CHECK(proofs_equal(proof, cluster_proof("s3cret", "join", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cres", "join", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "welcome", nonce, "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "join", make_nonce(), "a")));
  BOOST_CHECK(!proofs_equal(proof, cluster_proof("s3cret", "join", nonce, "b")));
  BOOST_CHECK(!proofs_equal(proof, ""));
  BOOST_CHECK(!proofs_equal("", ""));
}

BOOST_AUTO_TEST_CASE(nonces_are_not_repeated) {
  auto a = make_nonce();
  BOOST_CHECK_EQUAL(a.size(), 32u);
  BOOST_CHECK_NE(a, make_nonce());
}

BOOST_AUTO_TEST_CASE(addresses_are_host_and_port) {
  std::string host, error;
  uint16_t port = 0;
  BOOST_CHECK(split_address("10.0.0.2:25680", host, port, error));
  BOOST_CHECK_EQUAL(host, "10.0.0.2");
  BOOST_CHECK_EQUAL(port, 25680);
  BOOST_CHECK(split_address("node-b.example:1", host, port, error));
  BOOST_CHECK_EQUAL(host, "node-b.example");
  for (const char* bad : {"node-b", ":25680", "node-b:", "node-b:0", "node-b:65536", "b:12x"}) {
    BOOST_CHECK_MESSAGE(!split_address(bad, host, port, error), bad);
    BOOST_CHECK_MESSAGE(error.find(bad) != std::string::npos, error);
  }
}

namespace {

caf::behavior idle(caf::event_based_actor*) {
  return {[](int) {}};
}

queue_placement placed(const std::string& name, const std::string& node, caf::actor queue) {
  queue_placement p;
  p.vhost = "/";
  p.spec.name = name;
  p.node = node;
  p.queue = std::move(queue);
  return p;
}

}  // namespace

namespace {

// A loopback TCP socket bound to a port of its own; listening if asked.
struct bound_socket {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  uint16_t port = 0;
  explicit bound_socket(bool listening) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    if (listening) BOOST_REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof addr;
    BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~bound_socket() { ::close(fd); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_probe_tells_a_listening_port_from_a_closed_one) {
  using std::chrono::milliseconds;
  bound_socket listening(true);
  auto found = warren::probe_tcp("localhost", listening.port, milliseconds(3000));
  BOOST_CHECK_EQUAL(found.error, "");
  // The address that answered, as a number: CAF connects to it without a lookup of its own.
  BOOST_CHECK(found.address == "127.0.0.1" || found.address == "::1");
  bound_socket closed(false);  // bound, so no other socket takes the port meanwhile
  auto refused = warren::probe_tcp("127.0.0.1", closed.port, milliseconds(3000));
  BOOST_CHECK_EQUAL(refused.error, "Connection refused");
  BOOST_CHECK_EQUAL(refused.address, "");
}

BOOST_AUTO_TEST_CASE(remote_queues_keep_their_route_id_while_their_node_comes_and_goes) {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto q1 = system.spawn(idle), q1_again = system.spawn(idle), q2 = system.spawn(idle);
  remote_queues rq;
  auto first = rq.place(placed("orders", "a", q1));
  BOOST_REQUIRE(first);
  BOOST_CHECK(first->id & remote_id_bit);
  BOOST_CHECK(!rq.place(placed("orders", "a", q1)));  // announced twice: nothing to rebind
  auto other = rq.place(placed("audit", "b", q2));
  BOOST_REQUIRE(other);
  BOOST_CHECK_NE(other->id, first->id);

  auto down = rq.node_gone("a", true);
  BOOST_REQUIRE_EQUAL(down.size(), 1u);
  BOOST_CHECK(down[0].queue == q1);  // as it was, for its routes to be dropped
  BOOST_REQUIRE(rq.find("orders"));
  BOOST_CHECK(!rq.find("orders")->queue);                 // known, unreachable
  auto back = rq.place(placed("orders", "a", q1_again));  // its node restarted
  BOOST_REQUIRE(back);
  BOOST_CHECK_EQUAL(back->id, first->id);
  BOOST_CHECK(back->queue == q1_again);

  BOOST_CHECK(!rq.remove("orders", "b"));  // only its home node removes it
  BOOST_CHECK(rq.remove("orders", "a"));
  BOOST_CHECK(!rq.find("orders"));
  BOOST_CHECK_EQUAL(rq.node_gone("b", false).size(), 1u);  // forgotten: gone for good
  BOOST_CHECK(rq.all().empty());
  for (auto& a : {q1, q1_again, q2}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

namespace {

// "exchange>destination key" for each binding, sorted, so that order does not matter.
std::vector<std::string> ends(std::vector<binding_spec> list) {
  std::vector<std::string> out;
  for (const auto& b : list)
    out.push_back(b.exchange + ">" + (b.to_exchange ? "x:" : "q:") + b.destination + " " + b.key);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_binding_table_finds_a_queues_or_an_exchanges_bindings_by_their_ends) {
  binding_table t;
  binding_spec implicit{"", "orders", "orders", {}, false};
  binding_spec logs_a{"logs", "orders", "a", {}, false};
  binding_spec logs_b{"logs", "orders", "b", {}, false};
  binding_spec to_audit{"logs", "audit", "#", {}, true};     // exchange to exchange
  binding_spec self_bound{"audit", "audit", "x", {}, true};  // an exchange bound to itself
  for (const auto& b : {implicit, logs_a, logs_b, to_audit, self_bound})
    BOOST_CHECK(t.insert(binding_identity(b), b));
  BOOST_CHECK(!t.insert(binding_identity(logs_a), logs_a));  // binding twice is a no-op
  BOOST_CHECK_EQUAL(t.size(), 5u);

  using lines = std::vector<std::string>;
  BOOST_CHECK(ends(t.leading_to("orders", false)) ==
              (lines{">q:orders orders", "logs>q:orders a", "logs>q:orders b"}));
  BOOST_CHECK(t.leading_to("orders", true).empty());  // no exchange of that name is bound to
  BOOST_CHECK(ends(t.leading_to("audit", true)) == (lines{"audit>x:audit x", "logs>x:audit #"}));
  BOOST_CHECK(ends(t.from("logs")) ==
              (lines{"logs>q:orders a", "logs>q:orders b", "logs>x:audit #"}));
  BOOST_CHECK(t.any_from("audit"));

  // Erasing keeps every index in step: nothing found is gone, nothing gone is found.
  BOOST_CHECK(t.erase(binding_identity(self_bound)));
  BOOST_CHECK(!t.erase(binding_identity(self_bound)));
  BOOST_CHECK(!t.any_from("audit"));
  BOOST_CHECK(ends(t.leading_to("audit", true)) == (lines{"logs>x:audit #"}));
  BOOST_CHECK(t.erase(binding_identity(logs_a)));
  BOOST_CHECK(ends(t.leading_to("orders", false)) ==
              (lines{">q:orders orders", "logs>q:orders b"}));
  BOOST_CHECK(t.erase(binding_identity(logs_b)));
  BOOST_CHECK(t.erase(binding_identity(to_audit)));
  BOOST_CHECK(!t.any_from("logs"));
  BOOST_CHECK(t.leading_to("audit", true).empty());
  BOOST_CHECK(t.contains(binding_identity(implicit)));
  t.clear();
  BOOST_CHECK(t.leading_to("orders", false).empty());
  BOOST_CHECK_EQUAL(t.size(), 0u);
}

namespace {

exchange_spec exchange(const std::string& name, exchange_type type, bool durable = true) {
  exchange_spec e;
  e.name = name;
  e.type = type;
  e.durable = durable;
  return e;
}

binding_spec binding(const std::string& exchange, const std::string& queue,
                     const std::string& key) {
  return {exchange, queue, key, {}, false};
}

// The changes as "kind name" lines, in order.
std::vector<std::string> described(const std::vector<topology_change>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    switch (c.kind) {
      case topology_change::declare_exchange:
        out.push_back("declare " + c.exchange.name);
        break;
      case topology_change::delete_exchange:
        out.push_back("delete " + c.name);
        break;
      case topology_change::bind:
        out.push_back("bind " + c.binding.exchange + ">" + c.binding.destination + " " +
                      c.binding.key);
        break;
      case topology_change::unbind:
        out.push_back("unbind " + c.binding.exchange + ">" + c.binding.destination + " " +
                      c.binding.key);
        break;
    }
  }
  return out;
}

using lines = std::vector<std::string>;

}  // namespace

BOOST_AUTO_TEST_CASE(equal_topologies_need_no_change) {
  vhost_topology t{"/", {exchange("logs", exchange_type::topic)}, {binding("logs", "q", "a.#")}};
  BOOST_CHECK(changes_to_adopt(t, t).empty());
}

BOOST_AUTO_TEST_CASE(what_the_view_lacks_goes_and_what_it_has_comes) {
  vhost_topology ours{
      "/",
      {exchange("keep", exchange_type::fanout), exchange("gone", exchange_type::direct)},
      {binding("keep", "q", ""), binding("gone", "q", "k")}};
  vhost_topology theirs{
      "/",
      {exchange("keep", exchange_type::fanout), exchange("new", exchange_type::topic)},
      {binding("keep", "q", "again"), binding("new", "q", "x.#")}};
  // The deleted exchange takes its binding with it; binds come before unbinds.
  BOOST_CHECK(described(changes_to_adopt(ours, theirs)) ==
              (lines{"delete gone", "declare new", "bind keep>q again", "bind new>q x.#",
                     "unbind keep>q "}));
}

BOOST_AUTO_TEST_CASE(an_exchange_of_another_kind_is_deleted_and_declared_again) {
  vhost_topology ours{
      "/", {exchange("shape", exchange_type::direct)}, {binding("shape", "q", "s")}};
  vhost_topology theirs{"/",
                        {exchange("shape", exchange_type::topic)},
                        {binding("shape", "q", "s"), binding("shape", "q", "s.*")}};
  // Its bindings went with it, so even the one both have is made again.
  BOOST_CHECK(described(changes_to_adopt(ours, theirs)) ==
              (lines{"delete shape", "declare shape", "bind shape>q s", "bind shape>q s.*"}));
  auto durable_only = theirs;
  durable_only.exchanges[0] = exchange("shape", exchange_type::direct, false);
  durable_only.bindings = ours.bindings;
  BOOST_CHECK(described(changes_to_adopt(ours, durable_only)) ==
              (lines{"delete shape", "declare shape", "bind shape>q s"}));
}

BOOST_AUTO_TEST_CASE(bindings_differ_by_their_arguments) {
  auto with_arg = binding("h", "q", "");
  with_arg.arguments.push_back({"x-match", field_value::of_text("any")});
  vhost_topology ours{"/", {exchange("h", exchange_type::headers)}, {binding("h", "q", "")}};
  vhost_topology theirs{"/", {exchange("h", exchange_type::headers)}, {with_arg}};
  BOOST_CHECK(described(changes_to_adopt(ours, theirs)) == (lines{"bind h>q ", "unbind h>q "}));
  BOOST_CHECK_NE(binding_identity(with_arg), binding_identity(binding("h", "q", "")));
}

BOOST_AUTO_TEST_CASE(exchange_to_exchange_bindings_go_with_their_destination) {
  binding_spec e2e{"src", "dst", "k", {}, true};
  vhost_topology ours{
      "/", {exchange("src", exchange_type::direct), exchange("dst", exchange_type::fanout)}, {e2e}};
  vhost_topology theirs{"/", {exchange("src", exchange_type::direct)}, {}};
  BOOST_CHECK(described(changes_to_adopt(ours, theirs)) == (lines{"delete dst"}));
  // Nothing at all in the view: everything of ours goes.
  BOOST_CHECK(described(changes_to_adopt(ours, vhost_topology{"/", {}, {}})) ==
              (lines{"delete dst", "delete src"}));
}

namespace {

struct middleman_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  middleman_system() {
    register_message_types(cfg);
    cfg.load<caf::io::middleman>();
    system = std::make_unique<caf::actor_system>(cfg);
  }
};

message_ptr keyed(const std::string& key) {
  message m;
  m.id = next_message_id();
  m.routing_key = key;
  m.body = "b";
  return std::make_shared<const message>(std::move(m));
}

}  // namespace

// The window this closes: a member's loss reaches the publishers (which refuse what waits) before
// the vhost re-points the exchanges, and a publish routed in between went to the dead node's
// queue and was never answered. Now the exchange refuses it to its publisher.
BOOST_AUTO_TEST_CASE(a_publish_for_a_queue_on_a_lost_node_is_refused_to_its_publisher) {
  middleman_system far, near;
  auto far_queue = far.system->spawn(
      []() -> caf::behavior { return {[](enqueue_atom, const publish_batch&) {}}; });
  auto port = far.system->middleman().publish(far_queue, 0, "127.0.0.1");
  BOOST_REQUIRE(port);
  auto remote = near.system->middleman().remote_actor("127.0.0.1", *port);
  BOOST_REQUIRE(remote);
  exchange_spec spec;
  spec.name = "x";
  auto exchange = near.system->spawn(exchange_actor, spec, caf::actor{});
  caf::scoped_actor self{*near.system};
  self->request(exchange, caf::infinite, bind_atom::value, uint64_t{1}, *remote, std::string("k"),
                field_table{})
      .receive([](bool) {}, [](caf::error& err) { BOOST_FAIL("bind: " << caf::to_string(err)); });

  // The far node goes away; the exchange still routes "k" to its queue.
  self->monitor(*remote);
  caf::anon_send_exit(far_queue, caf::exit_reason::kill);
  far.system.reset();
  self->receive([](caf::down_msg&) {});
  publish_batch batch{caf::actor_cast<caf::actor>(self), 3, {{keyed("k"), 41}, {keyed("k"), 42}}};
  self->request(exchange, caf::infinite, publish_atom::value, batch)
      .receive(
          [](std::vector<uint32_t>& counts) {
            BOOST_CHECK(counts == (std::vector<uint32_t>{1, 1}));
          },
          [](caf::error& err) { BOOST_FAIL("publish: " << caf::to_string(err)); });
  // A minute guards against a hang; it is not a speed expectation.
  bool answered = false;
  self->receive(
      [&](confirm_atom, uint16_t channel, const std::vector<uint64_t>& acked,
          const std::vector<uint64_t>& nacked) {
        answered = true;
        BOOST_CHECK_EQUAL(channel, 3);
        BOOST_CHECK(acked.empty());
        BOOST_CHECK(nacked == (std::vector<uint64_t>{41, 42}));
      },
      caf::after(std::chrono::minutes(1)) >> [] {});
  BOOST_CHECK_MESSAGE(answered, "the publish was never answered");
  self->send_exit(exchange, caf::exit_reason::user_shutdown);
}
