// Definitions export and import in RabbitMQ's JSON, with warrenctl against real nodes: a setup
// moved from one node to another (and across a restart), a file written as RabbitMQ writes
// one, and bad files, which change nothing.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

using nlohmann::json;
using warren::test::command_result;
using warren::test::node_process;
using warren::test::run_command;
using warren::test::temp_dir;

namespace {

command_result ctl(const node_process& node, std::vector<std::string> args) {
  std::vector<std::string> argv{WARRENCTL_PATH, "--port", std::to_string(node.port())};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv);
}

void ok(const node_process& node, std::vector<std::string> args) {
  auto r = ctl(node, args);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "warrenctl failed: " << r.err);
}

json exported(const node_process& node) {
  auto r = ctl(node, {"export-definitions", "-"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "export failed: " << r.err);
  return json::parse(r.out);
}

std::string write_file(const temp_dir& dir, const std::string& name, const std::string& text) {
  auto path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// RabbitMQ's rabbit_password_hashing_sha256, computed here with OpenSSL, not with Warren's code.
std::string rabbitmq_hash(const std::string& salt, const std::string& password) {
  std::string input = salt + password;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::string raw = salt + std::string(reinterpret_cast<char*>(digest), sizeof digest);
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()),
                          static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool logs_in(const node_process& node, const std::string& user, const std::string& password,
             const std::string& vhost) {
  return ctl(node, {"--user", user, "--password", password, "--vhost", vhost, "list", "queues"})
             .exit_code == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_setup_moves_to_another_node_and_survives_its_restart) {
  node_process a;
  ok(a, {"add-user", "alice", "s3cret", "--tags", "management"});
  ok(a, {"add-vhost", "shop"});
  ok(a, {"set-permissions", "alice", "^orders", ".*", "", "--vhost", "shop"});
  ok(a, {"set-vhost-limits", "shop", "--max-queues", "10"});
  ok(a, {"--vhost", "shop", "declare-exchange", "events", "--type", "topic", "--durable"});
  ok(a, {"--vhost", "shop", "declare-exchange", "audit", "--type", "fanout", "--durable"});
  ok(a, {"--vhost", "shop", "declare-queue", "orders", "--durable", "--arg", "x-max-length=5"});
  ok(a, {"--vhost", "shop", "bind", "events", "orders", "--key", "order.#"});
  ok(a, {"--vhost", "shop", "bind", "events", "audit", "--key", "#", "--to-exchange"});
  ok(a, {"--vhost", "shop", "declare-queue", "scratch"});  // transient: not exported
  ok(a, {"declare-queue", "tasks", "--durable"});
  ok(a, {"bind", "amq.direct", "tasks", "--key", "t"});  // from a built-in exchange
  auto defs = exported(a);
  BOOST_TEST(defs["queues"].size() == 2u, defs.dump());
  BOOST_TEST(defs["exchanges"].size() == 2u, defs.dump());
  BOOST_TEST(defs["bindings"].size() == 3u, defs.dump());
  BOOST_TEST(defs["parameters"][0]["value"]["max-queues"] == 10);

  temp_dir files;
  auto path = write_file(files, "defs.json", defs.dump());
  temp_dir b_dir;
  {
    node_process b({}, b_dir.path());
    BOOST_TEST(!logs_in(b, "alice", "s3cret", "shop"));
    auto imported = ctl(b, {"import-definitions", path});
    BOOST_TEST(imported.exit_code == 0, imported.err);
    BOOST_TEST(exported(b) == defs, exported(b).dump() + "\n" + defs.dump());
    BOOST_TEST(logs_in(b, "alice", "s3cret", "shop"));  // the hash moved, not the password
    BOOST_TEST(!logs_in(b, "alice", "wrong", "shop"));
    // Importing again changes nothing and is no error.
    BOOST_TEST(ctl(b, {"import-definitions", path}).exit_code == 0);
  }
  node_process b_again({}, b_dir.path());
  BOOST_TEST(exported(b_again) == defs);
  auto limits = ctl(b_again, {"--json", "vhost-limits", "shop"});
  BOOST_TEST(limits.out.find("10") != std::string::npos, limits.out);
}

BOOST_AUTO_TEST_CASE(import_reads_definitions_written_by_rabbitmq) {
  node_process node;
  json defs = {{"rabbit_version", "3.10.8"},
               {"rabbitmq_version", "3.10.8"},
               {"product_name", "RabbitMQ"},
               {"users",
                {{{"name", "ops"},
                  {"password_hash", rabbitmq_hash("abcd", "ops-pass")},
                  {"hashing_algorithm", "rabbit_password_hashing_sha256"},
                  {"tags", "administrator,monitoring"},  // RabbitMQ before 3.10 wrote a string
                  {"limits", json::object()}}}},
               {"vhosts", {{{"name", "legacy"}}}},
               {"permissions",
                {{{"user", "ops"},
                  {"vhost", "legacy"},
                  {"configure", ".*"},
                  {"write", ".*"},
                  {"read", ".*"}}}},
               {"topic_permissions", json::array()},
               {"parameters",
                {{{"vhost", "legacy"},
                  {"component", "vhost-limits"},
                  {"name", "limits"},
                  {"value", {{"max-connections", 7}}}},
                 {{"vhost", "legacy"},
                  {"component", "federation-upstream"},
                  {"name", "up"},
                  {"value", json::object()}}}},
               {"global_parameters", {{{"name", "cluster_name"}, {"value", "rabbit@host"}}}},
               {"policies",
                {{{"vhost", "legacy"},
                  {"name", "ha"},
                  {"pattern", ".*"},
                  {"apply-to", "queues"},
                  {"definition", {{"max-length", 100}}},
                  {"priority", 0}}}},
               {"queues",
                {{{"name", "jobs"},
                  {"vhost", "legacy"},
                  {"durable", true},
                  {"auto_delete", false},
                  {"arguments", {{"x-queue-type", "classic"}, {"x-max-priority", 5}}}}}},
               {"exchanges",
                {{{"name", "work"},
                  {"vhost", "legacy"},
                  {"type", "direct"},
                  {"durable", true},
                  {"auto_delete", false},
                  {"internal", false},
                  {"arguments", json::object()}}}},
               {"bindings",
                {{{"source", "work"},
                  {"vhost", "legacy"},
                  {"destination", "jobs"},
                  {"destination_type", "queue"},
                  {"routing_key", "job"},
                  {"arguments", json::object()}}}}};
  temp_dir files;
  auto r = ctl(node, {"import-definitions", write_file(files, "rabbit.json", defs.dump())});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(r.err.find("skipped 3 policies and parameters") != std::string::npos, r.err);

  BOOST_TEST(logs_in(node, "ops", "ops-pass", "legacy"));
  auto users = ctl(node, {"--user", "ops", "--password", "ops-pass", "--vhost", "legacy", "--json",
                          "list-users"});
  BOOST_TEST(users.out.find("monitoring") != std::string::npos, users.out + users.err);
  auto as_ops = [&](std::vector<std::string> args) {
    std::vector<std::string> all{"--user", "ops", "--password", "ops-pass", "--vhost", "legacy"};
    all.insert(all.end(), args.begin(), args.end());
    return ctl(node, all);
  };
  BOOST_TEST(as_ops({"publish", "work", "job", "--body", "hello"}).exit_code == 0);
  auto got = as_ops({"get", "jobs"});
  BOOST_TEST(got.out.find("hello") != std::string::npos, got.out + got.err);
  auto limits = ctl(node, {"--json", "vhost-limits", "legacy"});
  BOOST_TEST(limits.out.find("7") != std::string::npos, limits.out);
}

BOOST_AUTO_TEST_CASE(bad_definitions_are_refused_whole_naming_what_is_wrong) {
  node_process node;
  temp_dir files;
  json base = {{"users",
                {{{"name", "bob"},
                  {"password_hash", rabbitmq_hash("wxyz", "pw")},
                  {"tags", json::array()}}}},
               {"vhosts", {{{"name", "fresh"}}}}};
  auto refused = [&](json defs, const std::string& expected) {
    auto r = ctl(node, {"import-definitions", write_file(files, "bad.json", defs.dump())});
    BOOST_TEST(r.exit_code == 1, r.err);
    BOOST_TEST(r.err.find(expected) != std::string::npos, r.err);
  };
  auto with = [&](const char* section, json entry) {
    json defs = base;
    defs[section] = json::array({entry});
    return defs;
  };
  refused(with("permissions", {{"user", "nobody"},
                               {"vhost", "/"},
                               {"configure", ".*"},
                               {"write", ".*"},
                               {"read", ".*"}}),
          "user 'nobody'");
  refused(
      with("permissions",
           {{"user", "bob"}, {"vhost", "fresh"}, {"configure", "("}, {"write", ""}, {"read", ""}}),
      "in vhost 'fresh'");
  refused(with("queues", {{"name", "q"}, {"vhost", "nowhere"}, {"durable", true}}),
          "vhost 'nowhere'");
  refused(with("exchanges", {{"name", "x"}, {"vhost", "/"}, {"type", "x-consistent-hash"}}),
          "exchanges[0]");
  refused(with("exchanges", {{"name", "amq.custom"}, {"vhost", "/"}, {"type", "direct"}}),
          "built in");
  json bad_hash = base;
  bad_hash["users"][0]["password_hash"] = "not a hash";
  refused(bad_hash, "user 'bob'");
  json sha512 = base;
  sha512["users"][0]["hashing_algorithm"] = "rabbit_password_hashing_sha512";
  refused(sha512, "rabbit_password_hashing_sha512");
  auto not_json = ctl(node, {"import-definitions", write_file(files, "x.json", "{users: ")});
  BOOST_TEST(not_json.exit_code == 1);
  BOOST_TEST(not_json.err.find("is not JSON") != std::string::npos, not_json.err);

  // None of those attempts applied anything: bob and the vhost "fresh" never came to be.
  auto vhosts = ctl(node, {"list", "vhosts"});
  BOOST_TEST(vhosts.out.find("fresh") == std::string::npos, vhosts.out);
  BOOST_TEST(!logs_in(node, "bob", "pw", "/"));

  // A queue defined with other arguments than the existing one: PRECONDITION_FAILED naming it.
  ok(node, {"declare-queue", "orders", "--durable"});
  auto conflict =
      ctl(node, {"import-definitions", write_file(files, "c.json",
                                                  json{{"queues",
                                                        {{{"name", "orders"},
                                                          {"vhost", "/"},
                                                          {"durable", true},
                                                          {"arguments", {{"x-max-length", 1}}}}}}}
                                                      .dump())});
  BOOST_TEST(conflict.exit_code == 1);
  BOOST_TEST(conflict.err.find("PRECONDITION_FAILED") != std::string::npos, conflict.err);
  BOOST_TEST(conflict.err.find("orders") != std::string::npos, conflict.err);
  BOOST_TEST(node.alive());
}

BOOST_AUTO_TEST_CASE(only_administrators_export_and_import) {
  node_process node;
  ok(node, {"add-user", "mona", "pw", "--tags", "monitoring"});
  ok(node, {"set-permissions", "mona", ".*", ".*", ".*"});
  auto as_mona = [&](std::vector<std::string> args) {
    std::vector<std::string> all{"--user", "mona", "--password", "pw"};
    all.insert(all.end(), args.begin(), args.end());
    return ctl(node, all);
  };
  auto out = as_mona({"export-definitions", "-"});
  BOOST_TEST(out.exit_code == 1);
  BOOST_TEST(out.err.find("ACCESS_REFUSED") != std::string::npos, out.err);
  temp_dir files;
  auto in = as_mona({"import-definitions", write_file(files, "d.json", "{\"vhosts\":[]}")});
  BOOST_TEST(in.exit_code == 1);
  BOOST_TEST(in.err.find("ACCESS_REFUSED") != std::string::npos, in.err);
}
