// warrenctl: the command-line client of a warren-node. See the README for the command list.
// Exit codes: 0 success, 1 the broker (or the connection) reported an error, 2 usage error.
// Errors are printed to stderr as "error: CODE: text".
#include "apps/warrenctl_admin.hpp"
#include "apps/warrenctl_args.hpp"
#include "apps/warrenctl_definitions.hpp"
#include "apps/warrenctl_grants.hpp"
#include "apps/warrenctl_output.hpp"
#include "apps/warrenctl_stats.hpp"
#include "apps/warrenctl_streams.hpp"
#include "apps/warrenctl_topology.hpp"
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"
#include "warren/grants.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>

using namespace warren::client;
using nlohmann::json;

using warrenctl::parse_assignments;
using warrenctl::usage_error;

namespace {

void print_message(const delivery& d, bool as_json) {
  if (as_json)
    std::cout << warrenctl::dump_json(warrenctl::to_json(d)) << '\n';
  else
    std::cout << d.body << '\n';
}

struct options {
  connect_options connect;
  bool json = false;
  bool linearizable = false;  // --linearizable: the node syncs with the metadata log first
  std::string token;          // --token: act through this grant instead of logging in
};

// publish: one message from --body, or one per stdin line with a window of batches in flight.
int publish(channel& ch, const std::string& exchange, const std::string& key,
            const std::optional<std::string>& body, bool persistent,
            const std::vector<std::string>& headers, bool mandatory, bool as_json) {
  ch.confirm_select();
  outbound_message proto;
  proto.exchange = exchange;
  proto.routing_key = key;
  proto.mandatory = mandatory;
  proto.properties.persistent = persistent;
  proto.properties.headers = parse_assignments(headers, "header");
  size_t returned = 0, rejected = 0, dropped = 0;
  auto report = [&](const std::vector<publish_result>& results) {
    for (const auto& r : results) {
      auto id = warren::to_string(r.id);
      if (as_json)
        std::cout << warrenctl::dump_json(
                         json{{"message_id", id}, {"outcome", to_string(r.outcome)}})
                  << '\n';
      else if (r.outcome == publish_outcome::routed)
        std::cout << id << '\n';
      else
        std::cout << id << '\t' << to_string(r.outcome) << '\n';
      returned += r.outcome == publish_outcome::returned;
      rejected += r.outcome == publish_outcome::rejected;
      dropped += r.outcome == publish_outcome::dropped;
    }
  };
  if (body) {
    proto.body = *body;
    report({ch.publish(proto)});
  } else {
    constexpr size_t batch_size = 2000;  // messages per call
    constexpr size_t window = 4;         // calls in flight
    std::deque<std::future<std::vector<publish_result>>> in_flight;
    std::vector<outbound_message> batch;
    std::string line;
    auto flush = [&] {
      if (batch.empty()) return;
      in_flight.push_back(ch.publish_batch(std::move(batch)));
      batch.clear();
      while (in_flight.size() >= window) {
        report(in_flight.front().get());
        in_flight.pop_front();
      }
    };
    while (std::getline(std::cin, line)) {
      auto m = proto;
      m.body = std::move(line);
      batch.push_back(std::move(m));
      if (batch.size() == batch_size) flush();
    }
    flush();
    while (!in_flight.empty()) {
      report(in_flight.front().get());
      in_flight.pop_front();
    }
  }
  std::cout.flush();
  if (returned + rejected + dropped > 0)
    std::cerr << "warning: " << returned << " returned (no route, mandatory), " << dropped
              << " dropped (no route), " << rejected << " rejected by a queue\n";
  return returned + rejected > 0 ? 1 : 0;
}

int get(channel& ch, const std::string& queue, size_t count, bool no_ack, bool requeue,
        bool as_json) {
  uint64_t last_tag = 0;
  for (size_t i = 0; i < count; ++i) {
    auto d = ch.get(queue, no_ack);
    if (!d) break;
    print_message(*d, as_json);
    last_tag = d->delivery_tag;
  }
  if (!no_ack && last_tag != 0) {
    if (requeue)
      ch.nack(last_tag, true, true);
    else
      ch.ack(last_tag, true);
    ch.qos(0);  // a waiting call: makes sure the settle reached the broker before we exit
  }
  return 0;
}

// Ready messages left in the queue: printed as get prints them, with their position.
int peek(channel& ch, const std::string& queue, uint64_t from, uint32_t count, bool as_json) {
  for (const auto& d : ch.peek(queue, from, count)) print_message(d, as_json);
  return 0;
}

// Where a consume starts in a stream, and its group; both empty for a plain consume.
struct stream_position {
  std::string offset, group;
  bool any() const { return !offset.empty() || !group.empty(); }
};

int consume(channel& ch, const std::string& queue, size_t count, uint32_t prefetch, bool no_ack,
            double timeout, const stream_position& stream, bool as_json) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<delivery> inbox;
  bool cancelled = false;
  std::string cancel_reason;
  consume_options o;
  o.no_ack = no_ack;
  o.prefetch = prefetch;
  auto on_message = [&](const delivery& d) {
    std::lock_guard<std::mutex> guard(mutex);
    inbox.push_back(d);
    if (inbox.size() == 1) ready.notify_one();  // the reader only waits on an empty inbox
  };
  auto on_cancel = [&](const std::string&, const std::string& reason) {
    std::lock_guard<std::mutex> guard(mutex);
    cancelled = true;
    cancel_reason = reason;
    ready.notify_one();
  };
  if (stream.any())
    ch.consume_stream(queue, warrenctl::parse_stream_offset(stream.offset), stream.group, prefetch,
                      on_message, on_cancel);
  else
    ch.consume(queue, o, on_message, on_cancel);
  size_t seen = 0;
  uint64_t unacked_upto = 0;
  size_t unacked = 0;
  auto ack_now = [&] {
    if (!no_ack && unacked > 0) ch.ack(unacked_upto, true);
    unacked = 0;
  };
  std::unique_lock<std::mutex> lock(mutex);
  while (count == 0 || seen < count) {
    auto have = [&] { return !inbox.empty() || cancelled; };
    if (inbox.empty()) {
      // Settle what was printed once the stream pauses (not on every gap, which would return
      // credit a few messages at a time and shrink the broker's delivery batches).
      if (!ready.wait_for(lock, std::chrono::milliseconds(5), have)) {
        lock.unlock();
        ack_now();
        std::cout.flush();
        lock.lock();
        if (timeout > 0) {
          if (!ready.wait_for(lock, std::chrono::duration<double>(timeout), have)) break;
        } else {
          ready.wait(lock, have);
        }
      }
    }
    if (inbox.empty() && cancelled) {
      std::cerr << "consumer cancelled by the broker: " << cancel_reason << '\n';
      break;
    }
    auto d = std::move(inbox.front());
    inbox.pop_front();
    lock.unlock();
    print_message(d, as_json);
    ++seen;
    unacked_upto = d.delivery_tag;
    // Acks go out in groups (ack with `multiple`): each message is acked, one call per group.
    if (++unacked >= std::max<uint32_t>(1, prefetch / 4)) ack_now();
    lock.lock();
  }
  lock.unlock();
  ack_now();
  std::cout.flush();
  ch.close();  // deliveries beyond --count were not acked and go back to the queue
  return 0;
}

// lookup: where a message still held by a queue is, and the message.
int lookup(channel& ch, const std::string& id_text, const std::string& vhost, bool as_json) {
  warren::message_id id;
  if (!warren::parse_message_id(id_text, id))
    throw usage_error("'" + id_text + "' is not a message id (32 hex digits)");
  auto found = ch.lookup(id);
  if (!found) {
    std::cerr << "error: NOT_FOUND: no message " << id_text << " in vhost '" << vhost << "'\n";
    return 1;
  }
  if (as_json) {
    auto j = warrenctl::to_json(found->message);
    j["queue"] = found->queue;
    j["state"] = found->state;
    std::cout << warrenctl::dump_json(j) << '\n';
  } else {
    std::cout << "queue: " << found->queue << "\nstate: " << found->state
              << "\nexchange: " << found->message.exchange
              << "\nrouting_key: " << found->message.routing_key
              << "\nbody: " << found->message.body << '\n';
  }
  return 0;
}

// Where and how to reach the node; returns --port, which --tls changes the default of.
CLI::Option* add_connect_options(CLI::App& app, connect_options& connect) {
  app.add_option("--host", connect.host, "node address")->capture_default_str();
  auto* port = app.add_option("--port", connect.port, "node RPC port (5681 with --tls)")
                   ->capture_default_str();
  app.add_option("--vhost", connect.vhost, "virtual host")->capture_default_str();
  app.add_option("--user", connect.user, "user name")
      ->envname("WARREN_USER")
      ->capture_default_str();
  app.add_option("--password", connect.password, "password (default guest)")
      ->envname("WARREN_PASSWORD");
  app.add_flag("--tls", connect.tls, "connect over TLS (the node's --tls-port)");
  app.add_option("--tls-server-name", connect.tls_server_name,
                 "the name the node's certificate must carry (default: --host)");
  app.add_option("--tls-ca", connect.tls_ca,
                 "PEM CA certificates to check the node's certificate against (default: the "
                 "system's trust store)");
  auto* cert = app.add_option("--tls-cert", connect.tls_cert,
                              "PEM client certificate, for a node that verifies clients");
  app.add_option("--tls-key", connect.tls_key, "PEM private key of --tls-cert")->needs(cert);
  return port;
}

// The commands that move messages or read the node's state: publish, get, consume, lookup, list
// and stats.
struct messaging_commands {
  std::string exchange, queue, key, message_id_text, what;
  std::string list_queue;  // list groups QUEUE
  stream_position stream;
  std::vector<std::string> headers;
  std::optional<std::string> body;
  bool persistent = false, mandatory = false, no_ack = false, requeue = false;
  size_t count = 0;
  uint32_t prefetch = 1000;
  double timeout = 0;
  warrenctl::stats_options stats_opt;
  uint64_t from = 0;
  uint32_t peek_count = 10;
  CLI::App *publish_cmd, *get_cmd, *peek_cmd, *consume_cmd, *list_cmd, *lookup_cmd, *stats_cmd;

  explicit messaging_commands(CLI::App& app) {
    publish_cmd =
        app.add_subcommand("publish", "publish --body, or one message per line of standard input");
    publish_cmd->add_option("EXCHANGE", exchange)->required();
    publish_cmd->add_option("ROUTING_KEY", key)->required();
    publish_cmd->add_option("--body", body, "message body");
    publish_cmd->add_flag("--persistent", persistent);
    publish_cmd->add_option("--header", headers, "K=V header");
    publish_cmd->add_flag("--mandatory", mandatory);

    get_cmd = app.add_subcommand("get", "fetch messages; acks them unless told otherwise");
    get_cmd->add_option("QUEUE", queue)->required();
    get_cmd->add_option("--count", count, "how many (default 1)");
    auto* get_no_ack = get_cmd->add_flag("--no-ack", no_ack);
    get_cmd->add_flag("--requeue", requeue, "put them back afterwards")->excludes(get_no_ack);

    peek_cmd = app.add_subcommand(
        "peek", "print ready messages without taking them (each with its position as its tag)");
    peek_cmd->add_option("QUEUE", queue)->required();
    peek_cmd->add_option("--count", peek_count, "how many")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    peek_cmd->add_option("--from", from, "position to start at (0: the next a consumer gets)");

    consume_cmd = app.add_subcommand("consume", "subscribe and print messages, acking each");
    consume_cmd->add_option("QUEUE", queue)->required();
    consume_cmd->add_option("--count", count, "stop after N messages");
    consume_cmd->add_option("--prefetch", prefetch, "unacked messages in flight")
        ->capture_default_str();
    consume_cmd->add_flag("--no-ack", no_ack);
    consume_cmd->add_option("--timeout", timeout, "stop after SECONDS without a message");
    consume_cmd->add_option("--offset", stream.offset,
                            "a stream: first|last|next|OFFSET|TIME (ISO 8601 UTC, or -30m ago)");
    consume_cmd->add_option("--group", stream.group, "a stream: the consumer group to read in");

    list_cmd = app.add_subcommand(
        "list",
        "list vhosts|exchanges|queues|bindings|consumers|connections|nodes|grants|groups QUEUE");
    list_cmd->add_option("WHAT", what)
        ->required()
        ->check(CLI::IsMember({"vhosts", "exchanges", "queues", "bindings", "consumers",
                               "connections", "nodes", "grants", "groups"}));
    list_cmd->add_option("QUEUE", list_queue, "list groups: the stream");

    lookup_cmd = app.add_subcommand("lookup", "find a message still held by a queue");
    lookup_cmd->add_option("MESSAGE_ID", message_id_text)->required();

    stats_cmd = app.add_subcommand("stats", "rates per queue and connection between two readings");
    stats_cmd->add_option("--interval", stats_opt.interval_seconds, "seconds between readings")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 3600.0));
    stats_cmd->add_flag("--watch", stats_opt.watch, "print a report every interval until stopped");
    stats_cmd->add_option("--reports", stats_opt.reports, "with --watch: stop after N reports");
  }

  // Carries out `cmd` if it is one of these; nothing when it is not.
  std::optional<int> run(CLI::App* cmd, connection& conn, const options& opt) {
    if (cmd == stats_cmd) {
      stats_opt.json = opt.json;
      warrenctl::run_stats(conn, stats_opt);
      return 0;
    }
    if (cmd == list_cmd) {
      list(conn, opt.json);
      return 0;
    }
    if (cmd != publish_cmd && cmd != get_cmd && cmd != peek_cmd && cmd != consume_cmd &&
        cmd != lookup_cmd)
      return std::nullopt;
    auto ch = conn.open_channel();
    return run_on(cmd, *ch, opt);
  }

  // Carries out publish, get, peek, consume or lookup on `ch`.
  int run_on(CLI::App* cmd, channel& ch, const options& opt) {
    if (cmd == publish_cmd)
      return publish(ch, exchange, key, body, persistent, headers, mandatory, opt.json);
    if (cmd == get_cmd) return get(ch, queue, count == 0 ? 1 : count, no_ack, requeue, opt.json);
    if (cmd == peek_cmd) return peek(ch, queue, from, peek_count, opt.json);
    if (cmd == consume_cmd)
      return consume(ch, queue, count, prefetch, no_ack, timeout, stream, opt.json);
    return lookup(ch, message_id_text, opt.connect.vhost, opt.json);
  }

  void list(connection& conn, bool json) {
    if (what == "vhosts") warrenctl::print_list(conn.list_vhosts(), json);
    if (what == "exchanges") warrenctl::print_list(conn.list_exchanges(), json);
    if (what == "queues") warrenctl::print_list(conn.list_queues(), json);
    if (what == "bindings") warrenctl::print_list(conn.list_bindings(), json);
    if (what == "consumers") warrenctl::print_list(conn.list_consumers(), json);
    if (what == "connections") warrenctl::print_list(conn.list_connections(), json);
    if (what == "nodes") warrenctl::print_list(conn.list_nodes(), json);
    if (what == "grants") warrenctl::print_list(conn.list_grants(), json);
    if (what == "groups") {
      if (list_queue.empty()) throw usage_error("list groups needs the stream's name");
      warrenctl::print_list(conn.open_channel()->list_groups(list_queue), json);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  options opt;
  CLI::App app{"warrenctl: manage and use a warren-node"};
  auto* port_option = add_connect_options(app, opt.connect);
  app.add_flag("--json", opt.json, "machine-readable output");
  app.add_flag("--linearizable", opt.linearizable,
               "first wait until the node applied every metadata change the cluster committed, "
               "so that what it lists is current (fails without a quorum)");
  auto* token_option =
      app.add_option("--token", opt.token,
                     "publish, get or consume through a grant's token (warrenctl grant) instead of "
                     "logging in")
          ->envname("WARREN_TOKEN");
  app.require_subcommand(1);
  warrenctl::topology_commands topology(app);
  messaging_commands messaging(app);
  warrenctl::admin_commands admin(app);
  warrenctl::definitions_commands definitions(app);
  warrenctl::stream_commands streams(app);
  warrenctl::grant_commands grants(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (opt.connect.tls && port_option->count() == 0) opt.connect.port = 5681;
  const char* token_variable = std::getenv("WARREN_TOKEN");
  bool token_given = token_option->count() > 0 || token_variable != nullptr;
  if (token_given && opt.token.empty()) {
    std::cerr << "error: --token is empty (or WARREN_TOKEN is set but empty): give a grant's token "
                 "(warrenctl grant prints one), or "
                 "leave --token out to log in\n";
    return 2;
  }

  try {
    opt.connect.client_name = "warrenctl";
    auto cmd = app.get_subcommands().front();
    if (!opt.token.empty()) {
      if (cmd != messaging.publish_cmd && cmd != messaging.get_cmd && cmd != messaging.consume_cmd)
        throw usage_error("with --token, warrenctl can publish, get or consume only");
      return messaging.run_on(cmd, *restore_grant(opt.connect, opt.token), opt);
    }
    auto conn = connection::open(opt.connect);
    if (opt.linearizable) conn->sync_metadata();
    if (topology.run(cmd, *conn, opt.json) || admin.run(cmd, *conn, opt.json) ||
        definitions.run(cmd, *conn) || streams.run(cmd, *conn, opt.json) ||
        grants.run(cmd, *conn, opt.json))
      return 0;
    return messaging.run(cmd, *conn, opt).value_or(0);
  } catch (const usage_error& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  } catch (const error& e) {
    std::cerr << "error: " << e.code() << ": " << e.text() << '\n';
    return 1;
  } catch (const std::runtime_error& e) {  // a file warrenctl could not read or write
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}
