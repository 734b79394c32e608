#include "apps/warrenctl_topology.hpp"

#include "apps/warrenctl_args.hpp"
#include "apps/warrenctl_output.hpp"
#include "warren/channel.hpp"

#include <algorithm>
#include <iostream>

namespace warrenctl {

using json = nlohmann::json;
using warren::client::channel;

topology_commands::topology_commands(CLI::App& app) {
  add_exchange_commands(app);
  add_queue_commands(app);
  add_binding_commands(app);
}

void topology_commands::add_exchange_commands(CLI::App& app) {
  declare_exchange_ = app.add_subcommand("declare-exchange", "declare an exchange");
  declare_exchange_->add_option("NAME", name_)->required();
  declare_exchange_->add_option("--type", type_, "direct|fanout|topic|headers")->required();
  declare_exchange_->add_flag("--durable", durable_);
  declare_exchange_->add_flag("--auto-delete", auto_delete_);
  declare_exchange_->add_flag("--internal", internal_);
  declare_exchange_->add_option("--arg", args_, "KEY=VALUE argument");
  delete_exchange_ = app.add_subcommand("delete-exchange", "delete an exchange");
  delete_exchange_->add_option("NAME", name_)->required();
  delete_exchange_->add_flag("--if-unused", if_unused_);
}

void topology_commands::add_queue_commands(CLI::App& app) {
  declare_queue_ = app.add_subcommand("declare-queue", "declare a queue (\"\" = server-named)");
  declare_queue_->add_option("NAME", name_)->required();
  declare_queue_->add_flag("--durable", durable_);
  declare_queue_->add_flag("--exclusive", exclusive_);
  declare_queue_->add_flag("--auto-delete", auto_delete_);
  declare_queue_->add_option("--arg", args_, "KEY=VALUE argument, e.g. x-max-length=1000");
  declare_queue_->add_option("--node", node_,
                             "cluster node to create it on (default: the connected node)");
  delete_queue_ = app.add_subcommand("delete-queue", "delete a queue");
  delete_queue_->add_option("NAME", name_)->required();
  delete_queue_->add_flag("--if-unused", if_unused_);
  delete_queue_->add_flag("--if-empty", if_empty_);
  delete_queue_->add_flag("--force", force_,
                          "delete a stream even though consumer groups have not reached its end");
  purge_queue_ = app.add_subcommand("purge-queue", "drop a queue's ready messages");
  purge_queue_->add_option("NAME", name_)->required();
}

void topology_commands::add_binding_commands(CLI::App& app) {
  for (auto* slot : {&bind_, &unbind_}) {
    const char* verb = slot == &bind_ ? "bind" : "unbind";
    auto* c =
        app.add_subcommand(verb, std::string(verb) + " a queue (or an exchange) to an exchange");
    c->add_option("EXCHANGE", exchange_)->required();
    c->add_option("QUEUE", destination_,
                  "the destination: a queue, or an exchange with --to-exchange")
        ->required();
    c->add_flag("--to-exchange", to_exchange_, "the destination is an exchange (exchange.bind)");
    c->add_option("--key", key_, "binding key");
    c->add_option("--arg", args_, "KEY=VALUE binding argument (headers exchanges)");
    *slot = c;
  }
}

bool topology_commands::run(const CLI::App* cmd, warren::client::connection& conn, bool as_json) {
  const CLI::App* mine[] = {declare_exchange_,
                            delete_exchange_,
                            declare_queue_,
                            delete_queue_,
                            purge_queue_,
                            bind_,
                            unbind_};
  if (std::find(std::begin(mine), std::end(mine), cmd) == std::end(mine)) return false;
  auto ch = conn.open_channel();
  if (cmd == declare_exchange_) {
    ch->exchange_declare(
        name_, type_,
        {durable_, auto_delete_, internal_, false, parse_assignments(args_, "argument")});
  } else if (cmd == delete_exchange_) {
    ch->exchange_delete(name_, if_unused_);
  } else if (cmd == declare_queue_) {
    declare_queue(*ch, as_json);
  } else if (cmd == delete_queue_) {
    auto n = ch->queue_delete(name_, if_unused_, if_empty_, force_);
    if (as_json) std::cout << json{{"messages", n}}.dump() << '\n';
  } else if (cmd == purge_queue_) {
    auto n = ch->queue_purge(name_);
    if (as_json)
      std::cout << json{{"messages", n}}.dump() << '\n';
    else
      std::cout << n << " message(s) purged\n";
  } else {
    bind(*ch, cmd == unbind_);
  }
  return true;
}

void topology_commands::declare_queue(channel& ch, bool as_json) {
  auto ok = ch.queue_declare(name_, {durable_, exclusive_, auto_delete_, false,
                                     parse_assignments(args_, "argument"), node_});
  if (as_json)
    std::cout << dump_json(json{{"name", ok.name},
                                {"messages", ok.message_count},
                                {"consumers", ok.consumer_count}})
              << '\n';
  else
    std::cout << ok.name << '\n';
}

void topology_commands::bind(channel& ch, bool unbind) {
  auto args = parse_assignments(args_, "argument");
  if (to_exchange_ && !unbind)
    ch.exchange_bind(destination_, exchange_, key_, args);
  else if (to_exchange_)
    ch.exchange_unbind(destination_, exchange_, key_, args);
  else if (!unbind)
    ch.queue_bind(destination_, exchange_, key_, args);
  else
    ch.queue_unbind(destination_, exchange_, key_, args);
}

}  // namespace warrenctl
