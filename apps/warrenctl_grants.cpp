#include "apps/warrenctl_grants.hpp"

#include "apps/warrenctl_args.hpp"
#include "apps/warrenctl_output.hpp"

#include <iostream>

namespace warrenctl {

grant_commands::grant_commands(CLI::App& app) {
  grant_ =
      app.add_subcommand("grant",
                         "grant publisher EXCHANGE | consumer QUEUE: print a token that opens it "
                         "(warrenctl --token TOKEN publish|get|consume)");
  grant_->add_option("KIND", kind_)->required()->check(CLI::IsMember({"publisher", "consumer"}));
  grant_->add_option("TARGET", target_, "the exchange (\"\" for the default one) or queue")
      ->required();
  grant_->add_option("--key", key_,
                     "publisher: a topic pattern its routing keys must match (default: any)");
  grant_->add_option("--ttl", ttl_, "seconds until it expires (default: until revoked)");

  revoke_ = app.add_subcommand("revoke-grant",
                               "end a grant (its whole token or the 8-digit prefix that list "
                               "grants shows) and close its connections");
  revoke_->add_option("TOKEN", token_)->required();
}

bool grant_commands::run(const CLI::App* cmd, warren::client::connection& conn, bool as_json) {
  if (cmd == grant_) {
    if (kind_ == "consumer" && !key_.empty())
      throw usage_error("--key is for publisher grants (a consumer grant takes its whole queue)");
    auto token = kind_ == "publisher" ? conn.grant_publisher(target_, key_, ttl_)
                                      : conn.grant_consumer(target_, ttl_);
    if (as_json)
      std::cout << dump_json(nlohmann::json{{"token", token}}) << '\n';
    else
      std::cout << token << '\n';
    return true;
  }
  if (cmd == revoke_) {
    conn.revoke_grant(token_);
    return true;
  }
  return false;
}

}  // namespace warrenctl
