#include "apps/warrenctl_definitions.hpp"

#include "apps/warrenctl_output.hpp"

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace warrenctl {

using json = nlohmann::json;
using warren::definitions;
using warren::field;
using warren::field_table;
using warren::field_value;

definitions_commands::definitions_commands(CLI::App& app) {
  export_ = app.add_subcommand("export-definitions",
                               "write the node's definitions as RabbitMQ's JSON (administrator)");
  export_->add_option("FILE", file_, "where to write them; - for standard output")->required();
  import_ = app.add_subcommand("import-definitions",
                               "apply a RabbitMQ definitions JSON file (administrator)");
  import_->add_option("FILE", file_, "what to read; - for standard input")->required();
}

bool definitions_commands::run(const CLI::App* cmd, warren::client::connection& conn) {
  if (cmd == export_) {
    auto text = definitions_to_json(conn.export_definitions()).dump(2) + "\n";
    if (file_ == "-") {
      std::cout << text;
      return true;
    }
    std::ofstream out(file_, std::ios::trunc);
    if (!(out << text) || !out.flush()) throw std::runtime_error("cannot write " + file_);
    return true;
  }
  if (cmd != import_) return false;
  json j;
  try {
    if (file_ == "-") {
      j = json::parse(std::cin);
    } else {
      std::ifstream in(file_);
      if (!in) throw std::runtime_error("cannot read " + file_);
      j = json::parse(in);
    }
  } catch (const json::parse_error& e) {
    throw std::runtime_error(file_ + " is not JSON: " + e.what());
  }
  size_t skipped = 0;
  definitions defs;
  try {
    defs = definitions_from_json(j, skipped);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(file_ + ": " + e.what());
  }
  conn.import_definitions(defs);
  std::cerr << "imported " << defs.users.size() << " users, " << defs.vhosts.size() << " vhosts, "
            << defs.permissions.size() << " permissions, " << defs.exchanges.size()
            << " exchanges, " << defs.queues.size() << " queues, " << defs.bindings.size()
            << " bindings";
  if (skipped != 0) std::cerr << "; skipped " << skipped << " policies and parameters";
  std::cerr << "\n";
  return true;
}

}  // namespace warrenctl
