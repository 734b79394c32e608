// The grant tests' shared parts: a node with a topic exchange and a raw Cap'n Proto client that
// makes grants (grants_fixture), a second client that holds only a token (token_holder), and
// small helpers for their calls.
#pragma once

#include "raw_rpc.hpp"
#include "subprocess.hpp"

#include <capnp/ez-rpc.h>

#include <string>
#include <vector>

namespace warren::test::grants {

using warren::test::command_result;
using warren::test::node_process;
using namespace warren::test::raw;
namespace rpc = warren::rpc;

// A node with topic exchange "orders" routing "eu.#" to queue "eu", and a raw client logged in
// as guest (an administrator) that makes grants.
struct grants_fixture {
  explicit grants_fixture(std::string data_dir = {}) : node({}, std::move(data_dir)) {}

  node_process node;
  capnp::EzRpcClient client{"127.0.0.1", static_cast<unsigned>(node.port())};
  kj::WaitScope& ws = client.getWaitScope();
  rpc::Connection::Client conn = login("guest", "guest");
  rpc::Channel::Client ch = conn.openChannelRequest().send().getChannel();

  rpc::Connection::Client login(const std::string& user, const std::string& password) {
    auto req = client.getMain<rpc::Broker>().connectRequest();
    req.setVhost("/");
    req.setUser(user);
    req.setPassword(password);
    return req.send().getConnection();
  }

  // Sets `user`'s permissions in vhost "/" (write and read empty unless given).
  void permit(const std::string& user, const std::string& configure, const std::string& write = {},
              const std::string& read = {}) {
    auto perms = conn.setPermissionsRequest();
    perms.setUser(user);
    perms.setVhost("/");
    perms.setConfigure(configure);
    perms.setWrite(write);
    perms.setRead(read);
    perms.send().wait(ws);
  }

  // Adds `name` with password "secret" and these permissions in "/".
  void add_user(const std::string& name, const std::string& configure, const std::string& write,
                const std::string& read) {
    auto add = conn.addUserRequest();
    add.setName(name);
    add.setPassword("secret");
    add.send().wait(ws);
    permit(name, configure, write, read);
  }

  void declare_orders() {
    auto ex = ch.exchangeDeclareRequest();
    ex.setName("orders");
    ex.setType("topic");
    ex.send().wait(ws);
    for (auto name : {"eu", "other"}) {
      auto q = ch.queueDeclareRequest();
      q.setName(name);
      q.setDurable(true);
      q.send().wait(ws);
    }
    auto bind = ch.queueBindRequest();
    bind.setQueue("eu");
    bind.setExchange("orders");
    bind.setBindingKey("eu.#");
    bind.send().wait(ws);
  }

  std::string grant_publisher(const std::string& exchange, const std::string& pattern,
                              uint64_t ttl = 0) {
    auto req = conn.grantPublisherRequest();
    req.setExchange(exchange);
    req.setRoutingKeyPattern(pattern);
    req.setTtlSeconds(ttl);
    auto saved = req.send().getPublisher().saveRequest().send().wait(ws);
    auto t = saved.getToken();
    return std::string(reinterpret_cast<const char*>(t.begin()), t.size());
  }

  std::string grant_consumer(const std::string& queue, uint64_t ttl = 0) {
    auto req = conn.grantConsumerRequest();
    req.setQueue(queue);
    req.setTtlSeconds(ttl);
    auto saved = req.send().getConsumer().saveRequest().send().wait(ws);
    auto t = saved.getToken();
    return std::string(reinterpret_cast<const char*>(t.begin()), t.size());
  }

  uint64_t ready(const std::string& queue) {
    auto res = conn.listQueuesRequest().send().wait(ws);
    for (auto q : res.getQueues())
      if (text(q.getName()) == queue) return q.getMessagesReady();
    BOOST_FAIL("no queue " << queue);
    return 0;
  }

  template <class Pred>
  void pump_until(Pred done, const std::string& what) {
    warren::test::raw::pump_until(client, done, what);
  }

  command_result ctl(std::vector<std::string> args) {
    std::vector<std::string> argv{WARRENCTL_PATH, "--port", std::to_string(node.port())};
    argv.insert(argv.end(), args.begin(), args.end());
    return warren::test::run_command(argv);
  }
};

// A second client of the node that holds nothing but a token: a process of its own in spirit
// (its own TCP connection, no credentials).
struct token_holder {
  explicit token_holder(uint16_t port) : client("127.0.0.1", port) {}
  capnp::EzRpcClient client;

  capnp::Response<rpc::Broker::RestoreResults> restore(const std::string& token) {
    auto req = client.getMain<rpc::Broker>().restoreRequest();
    req.setToken(bytes(token));
    return req.send().wait(client.getWaitScope());
  }
};

inline capnp::Request<rpc::Publisher::PublishParams, rpc::Publisher::PublishResults> message_to(
    rpc::Publisher::Client& p, const std::string& exchange, const std::string& key) {
  auto req = p.publishRequest();
  auto m = req.initMessage();
  m.setExchange(exchange);
  m.setRoutingKey(key);
  m.setBody(bytes("to " + key));
  return req;
}

inline std::string code_of(const std::string& description) {
  return description.substr(0, description.find(": "));
}

}  // namespace warren::test::grants
