// Capability grants: minted by a connection for its user and vhost, stored (only the token's
// hash), listed, revoked and expired; a revoked or expired grant closes the connections logged
// in by it, so the capabilities that stand on them stop working.
#include "actors/node/node_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/connection_protocol.hpp"
#include "actors/node/grants.hpp"
#include "actors/node/permissions.hpp"
#include "actors/node/users.hpp"
#include "actors/routing/topic_trie.hpp"
#include "actors/storage/persistence_actor.hpp"
#include "core/clock.hpp"
#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <chrono>

namespace warren::node_parts {

namespace {

// A year of seconds times ten: longer-lived grants are refused rather than overflow.
constexpr int64_t max_ttl_s = int64_t{10} * 366 * 24 * 3600;

persistence::meta_mutation grant_change(const grant_record& g, bool erase) {
  return {persistence::meta_table::grants, persistence::grant_key(g),
          erase ? std::string() : persistence::encode_grant(g), erase};
}

std::string grant_text(const grant_record& g) {
  return "grant " + quote(g.token_prefix) + " (" + to_string(g.kind) + " of " +
         (g.kind == grant_kind::publisher ? "exchange " : "queue ") + quote(g.target) +
         " in vhost " + quote(g.vhost) + ", granted by " + quote(g.user) + ")";
}

void schedule_expiry(self_ptr self, const grant_record& g) {
  if (g.expires_ms == 0) return;
  auto delay = std::max<int64_t>(0, g.expires_ms - wall_ms());
  self->delayed_send(self, std::chrono::milliseconds(delay), expire_atom::value, g.token_hash);
}

bool is_admin(self_ptr self, const std::string& user) {
  auto u = self->state.users.find(user);
  return u != self->state.users.end() && has_tag(u->second, "administrator");
}

// Why `g`'s user may not (or no longer) do what `g` allows, or empty.
std::string check_grantor(const node_state& st, const grant_record& g) {
  if (st.users.count(g.user) == 0) return "user " + quote(g.user) + " no longer exists";
  auto p = st.permissions.find({g.user, g.vhost});
  if (p == st.permissions.end())
    return "user " + quote(g.user) + " has no permissions in vhost " + quote(g.vhost);
  bool publisher = g.kind == grant_kind::publisher;
  return access_rights(p->second).check(publisher ? access_kind::write : access_kind::read,
                                        publisher ? "exchange" : "queue", g.target);
}

// What is wrong with the grant asked for, or empty.
std::string check_request(const grant_record& what, int64_t ttl_s) {
  if (ttl_s < 0 || ttl_s > max_ttl_s)
    return "a grant's time to live is 0 (none) to " + std::to_string(max_ttl_s) + " seconds";
  bool publisher = what.kind == grant_kind::publisher;
  if (!publisher || !what.target.empty())
    if (auto problem = check_name(publisher ? "exchange name" : "queue name", what.target);
        !problem.empty())
      return problem;
  if (!publisher && !what.key_pattern.empty()) return "a consumer grant has no routing key pattern";
  // Checked first, before it is quoted or split: a pattern is a routing key's size at most.
  if (auto problem = check_key("routing key pattern", what.key_pattern); !problem.empty())
    return problem;
  if (auto problem = check_topic_binding_key(what.key_pattern); !problem.empty())
    return "routing key pattern " + quote(what.key_pattern) + ": " + problem;
  return {};
}

// Closes the connections logged in by grant `hash`, telling them why.
void close_connections_of(self_ptr self, const std::string& hash, const std::string& reason) {
  auto& st = self->state;
  for (const auto& [addr, h] : st.connection_grant) {
    if (h != hash) continue;
    if (auto c = st.connections.find(addr); c != st.connections.end())
      self->send(caf::actor_cast<connection_broker_api>(c->second), close_atom::value, reason);
  }
}

// Forgets grant `hash` and closes its connections; `done` once the deletion is stored.
template <class Done>
void drop_grant(self_ptr self, const std::string& hash, const std::string& reason, Done done) {
  auto g = self->state.grants.find(hash);
  auto gone = g->second;
  self->state.grants.erase(g);
  close_connections_of(self, hash, "grant " + quote(gone.token_prefix) + " " + reason);
  log(log_level::info, "node", grant_text(gone) + " " + reason);
  persist(self, self->state.storage.persistence, {grant_change(gone, true)}, std::move(done));
}

// The hashes of the grants that `token` (hex: the whole token or its prefix) names.
caf::expected<std::vector<std::string>> grants_named(const node_state& st, std::string token) {
  std::transform(token.begin(), token.end(), token.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string raw;
  bool whole = token.size() == 2 * grant_token_size, prefix = token.size() == grant_prefix_digits;
  if ((!whole && !prefix) || !from_hex(token, raw))
    return make_broker_error(reply_code::precondition_failed,
                             "a grant is named by its whole token (64 hex digits) or its first "
                             "8 digits, not " +
                                 quote(token));
  std::vector<std::string> found;
  if (whole) {
    if (auto hash = grant_token_hash(raw); st.grants.count(hash) != 0) found.push_back(hash);
  } else {
    for (const auto& [hash, g] : st.grants)
      if (g.token_prefix == token) found.push_back(hash);
  }
  if (found.empty())
    return make_broker_error(
        reply_code::not_found,
        "no grant with token " + std::string(prefix ? "prefix " : "") + quote(token));
  if (found.size() > 1)
    return make_broker_error(reply_code::precondition_failed,
                             "token prefix " + quote(token) + " names " +
                                 std::to_string(found.size()) + " grants; give the whole token");
  return found;
}

}  // namespace

void restore_grants(self_ptr self, std::vector<grant_record> grants) {
  std::vector<persistence::meta_mutation> expired;
  auto now = wall_ms();
  for (auto& g : grants) {
    if (g.expires_ms != 0 && g.expires_ms <= now) {
      log(log_level::info, "node", grant_text(g) + " expired while the node was down");
      expired.push_back(grant_change(g, true));
      continue;
    }
    schedule_expiry(self, g);
    self->state.grants[g.token_hash] = std::move(g);
  }
  if (expired.empty()) return;
  persist(self, self->state.storage.persistence, std::move(expired), [](const caf::error& err) {
    if (err)
      log(log_level::error, "node", "could not delete expired grants: " + to_string(describe(err)));
  });
}

caf::result<std::string> mint_grant(self_ptr self, grant_record what, int64_t ttl_s) {
  auto& st = self->state;
  auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
  auto vhost = st.connection_vhost.find(sender);
  if (vhost == st.connection_vhost.end() || st.connection_grant.count(sender) != 0)
    return make_broker_error(reply_code::access_refused,
                             "only a connection logged in as a user can grant");
  if (auto problem = check_request(what, ttl_s); !problem.empty())
    return make_broker_error(reply_code::precondition_failed, problem);
  what.user = requester(self);
  what.vhost = vhost->second;
  if (auto refused = check_grantor(st, what); !refused.empty())
    return make_broker_error(reply_code::access_refused, "cannot grant: " + refused);
  auto token = new_grant_token();
  what.token_hash = grant_token_hash(token);
  what.token_prefix = to_hex(token).substr(0, grant_prefix_digits);
  what.created_ms = wall_ms();
  what.expires_ms = ttl_s == 0 ? 0 : what.created_ms + ttl_s * 1000;
  st.grants[what.token_hash] = what;
  schedule_expiry(self, what);
  log(log_level::info, "node", grant_text(what) + " made");
  // The token is handed out only once its grant is on disk: a restart cannot void it.
  auto rp = self->make_response_promise<std::string>();
  persist(self, st.storage.persistence, {grant_change(what, false)},
          [=](const caf::error& err) mutable {
            if (err)
              rp.deliver(err);
            else
              rp.deliver(token);
          });
  return rp;
}

caf::result<std::vector<grant_record>> list_grants(self_ptr self) {
  auto user = requester(self);
  bool all = is_admin(self, user);
  std::vector<grant_record> out;
  for (const auto& [hash, g] : self->state.grants) {
    if (!all && g.user != user) continue;
    out.push_back(g);
    out.back().token_hash.clear();
  }
  return out;
}

caf::result<void> revoke_grant(self_ptr self, const std::string& token) {
  auto found = grants_named(self->state, token);
  if (!found) return found.error();
  auto hash = found->front();
  const auto& g = self->state.grants.at(hash);
  auto user = requester(self);
  if (g.user != user && !is_admin(self, user))
    return make_broker_error(reply_code::access_refused,
                             grant_text(g) + " may be revoked by its creator or an administrator");
  auto rp = self->make_response_promise<void>();
  drop_grant(self, hash, "revoked by " + quote(user), [=](const caf::error& err) mutable {
    if (err)
      rp.deliver(err);
    else
      deliver_unit(rp);
  });
  return rp;
}

void access_withdrawn(self_ptr self, const std::string& user, const std::string* vhost,
                      const std::string& reason) {
  auto& st = self->state;
  for (const auto& [addr, name] : st.connection_user) {
    if (name != user) continue;
    if (vhost != nullptr) {
      auto v = st.connection_vhost.find(addr);
      if (v == st.connection_vhost.end() || v->second != *vhost) continue;
    }
    if (auto c = st.connections.find(addr); c != st.connections.end())
      self->send(caf::actor_cast<connection_broker_api>(c->second), close_atom::value, reason);
  }
  std::vector<std::string> made;
  for (const auto& [hash, g] : st.grants)
    if (g.user == user && (vhost == nullptr || g.vhost == *vhost)) made.push_back(hash);
  for (const auto& hash : made)
    drop_grant(self, hash, "revoked: " + reason, [](const caf::error& err) {
      if (err)
        log(log_level::error, "node",
            "could not delete a revoked grant: " + to_string(describe(err)));
    });
}

void expire_grant(self_ptr self, const std::string& hash) {
  auto g = self->state.grants.find(hash);
  if (g == self->state.grants.end()) return;  // revoked before
  if (wall_ms() < g->second.expires_ms) {     // the clock was set back: not yet
    schedule_expiry(self, g->second);
    return;
  }
  drop_grant(self, hash, "expired", [](const caf::error& err) {
    if (err)
      log(log_level::error, "node",
          "could not delete an expired grant: " + to_string(describe(err)));
  });
}

std::string grant_login(self_ptr self, client_hello& hello, permission_record& rights,
                        grant_record& grant) {
  auto& st = self->state;
  auto g = st.grants.find(grant_token_hash(hello.grant_token));
  if (g == st.grants.end())
    return "login refused: no grant has this token (it was revoked, expired or never made)";
  if (g->second.expires_ms != 0 && g->second.expires_ms <= wall_ms())
    return "login refused: " + grant_text(g->second) + " expired";
  if (auto refused = check_grantor(st, g->second); !refused.empty())
    return "login refused: " + grant_text(g->second) + " no longer holds: " + refused;
  hello.user = g->second.user;
  hello.vhost = g->second.vhost;
  rights = grant_permissions(g->second);
  grant = g->second;
  grant.token_hash.clear();
  return {};
}

}  // namespace warren::node_parts
