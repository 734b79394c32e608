// warrenctl's topology commands: declare and delete exchanges and queues, purge queues, bind
// and unbind (queues, or exchanges with --to-exchange). Each runs on a channel of its own.
#pragma once

#include "warren/connection.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace warrenctl {

class topology_commands {
 public:
  /// Adds the subcommands to `app`.
  explicit topology_commands(CLI::App& app);

  /// Carries out `cmd` if it is one of these; false when it is not.
  bool run(const CLI::App* cmd, warren::client::connection& conn, bool as_json);

 private:
  void add_exchange_commands(CLI::App& app);
  void add_queue_commands(CLI::App& app);
  void add_binding_commands(CLI::App& app);
  void declare_queue(warren::client::channel& ch, bool as_json);
  void bind(warren::client::channel& ch, bool unbind);

  std::string name_, type_, exchange_, destination_, key_;
  std::vector<std::string> args_;
  std::string node_;  // declare-queue --node
  bool durable_ = false, auto_delete_ = false, internal_ = false, exclusive_ = false;
  bool if_unused_ = false, if_empty_ = false, to_exchange_ = false, force_ = false;
  CLI::App *declare_exchange_ = nullptr, *delete_exchange_ = nullptr, *declare_queue_ = nullptr,
           *delete_queue_ = nullptr, *purge_queue_ = nullptr, *bind_ = nullptr, *unbind_ = nullptr;
};

}  // namespace warrenctl
