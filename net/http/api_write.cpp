// PUT, DELETE and POST handlers that change the node: vhosts, queues, exchanges, bindings,
// users, permissions and definitions, each done as the request's user.
#include "net/http/api_json.hpp"
#include "net/http/api_routes.hpp"

#include "core/definitions_json.hpp"

#include <stdexcept>

namespace warren::net::http {

using json = nlohmann::json;

namespace {

bool flag(const json& body, const char* key, bool fallback) {
  auto v = body.find(key);
  if (v == body.end() || v->is_null()) return fallback;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_string()) return v->get<std::string>() == "true";
  throw std::invalid_argument(std::string("\"") + key + "\" is not true or false");
}

std::string text(const json& body, const char* key, const std::string& fallback = {}) {
  auto v = body.find(key);
  if (v == body.end() || v->is_null()) return fallback;
  if (!v->is_string()) throw std::invalid_argument(std::string("\"") + key + "\" is not a string");
  return v->get<std::string>();
}

field_table arguments(const json& body) {
  auto v = body.find("arguments");
  if (v == body.end() || v->is_null()) return {};
  return table_from_json(*v, "arguments");
}

bool query_flag(const api_request& req, const char* key) {
  auto q = req.query.find(key);
  return q != req.query.end() && q->second == "true";
}

std::vector<std::string> tags_of(const json& body) {
  auto v = body.find("tags");
  std::vector<std::string> out;
  if (v == body.end() || v->is_null()) return out;
  if (v->is_array()) return v->get<std::vector<std::string>>();
  std::string all = v->get<std::string>(), tag;
  for (char c : all + ",") {
    if (c != ',') {
      if (c != ' ') tag += c;
    } else if (!tag.empty()) {
      out.push_back(tag);
      tag.clear();
    }
  }
  return out;
}

kj::Promise<http_reply> done(kj::Promise<request_answer> p, unsigned status) {
  return p.then([status](request_answer) {
    http_reply r = no_content();
    r.status = status;
    return r;
  });
}

kj::Promise<http_reply> queue_change(api_env& env, const api_request& req) {
  const auto& vhost = req.path[1];
  auto name = req.path[2];
  if (req.method == kj::HttpMethod::DELETE) {
    bool if_unused = query_flag(req, "if-unused"), if_empty = query_flag(req, "if-empty");
    return done(as_user(env, req, vhost,
                        [=](connection_ref& c, uint64_t id, uint16_t ch) {
                          c.delete_queue(id, ch, name, if_unused, if_empty);
                        }),
                204);
  }
  auto body = body_json(req);
  queue_spec spec{name,
                  flag(body, "durable", true),
                  flag(body, "exclusive", false),
                  flag(body, "auto_delete", false),
                  arguments(body),
                  text(body, "node")};
  return done(as_user(env, req, vhost,
                      [spec](connection_ref& c, uint64_t id, uint16_t ch) {
                        c.declare_queue(id, ch, spec, false);
                      }),
              201);
}

kj::Promise<http_reply> exchange_change(api_env& env, const api_request& req) {
  const auto& vhost = req.path[1];
  auto name = exchange_from_path(req.path[2]);
  if (req.method == kj::HttpMethod::DELETE) {
    bool if_unused = query_flag(req, "if-unused");
    return done(as_user(env, req, vhost,
                        [=](connection_ref& c, uint64_t id, uint16_t ch) {
                          c.delete_exchange(id, ch, name, if_unused);
                        }),
                204);
  }
  auto body = body_json(req);
  exchange_spec spec;
  spec.name = name;
  auto type = text(body, "type", "direct");
  if (!parse_exchange_type(type, spec.type))
    throw std::invalid_argument("unknown exchange type \"" + type + "\"");
  spec.durable = flag(body, "durable", true);
  spec.auto_delete = flag(body, "auto_delete", false);
  spec.internal = flag(body, "internal", false);
  spec.arguments = arguments(body);
  return done(as_user(env, req, vhost,
                      [spec](connection_ref& c, uint64_t id, uint16_t ch) {
                        c.declare_exchange(id, ch, spec, false);
                      }),
              201);
}

// DELETE /bindings/{vhost}/e/{source}/{q|e}/{destination}/{properties key}
kj::Promise<http_reply> binding_delete(api_env& env, const api_request& req) {
  if (req.path.size() != 7 || req.path[2] != "e" || (req.path[4] != "q" && req.path[4] != "e"))
    return error_reply(404, "Object Not Found", "not a binding's path");
  binding_spec b{exchange_from_path(req.path[3]),
                 req.path[5],
                 req.path[6] == "~" ? std::string() : req.path[6],
                 {},
                 req.path[4] == "e"};
  return done(as_user(env, req, req.path[1],
                      [b](connection_ref& c, uint64_t id, uint16_t ch) { c.unbind(id, ch, b); }),
              204);
}

kj::Promise<http_reply> admin_change(api_env& env, const api_request& req) {
  const auto& what = req.path[0];
  bool del = req.method == kj::HttpMethod::DELETE;
  session_call send;
  if (what == "vhosts") {
    auto name = req.path[1];
    send = [=](connection_ref& c, uint64_t id, uint16_t) {
      del ? c.delete_vhost(id, name) : c.add_vhost(id, name);
    };
  } else if (what == "users") {
    auto name = req.path[1];
    auto body = del ? json::object() : body_json(req);
    if (!del && body.contains("password_hash"))
      throw std::invalid_argument("give \"password\"; setting a password hash is not supported");
    auto password = del ? std::string() : text(body, "password");
    auto tags = tags_of(body);
    send = [=](connection_ref& c, uint64_t id, uint16_t) {
      del ? c.delete_user(id, name) : c.add_user(id, name, password, tags);
    };
  } else {  // permissions/{vhost}/{user}
    if (req.path.size() != 3) return error_reply(404, "Object Not Found", "no such permission");
    auto vhost = req.path[1], user = req.path[2];
    auto body = del ? json::object() : body_json(req);
    permission_record p{user, vhost, text(body, "configure"), text(body, "write"),
                        text(body, "read")};
    send = [=](connection_ref& c, uint64_t id, uint16_t) {
      del ? c.clear_permissions(id, user, vhost) : c.set_permissions(id, p);
    };
  }
  return done(as_user(env, req, req.home_vhost(), std::move(send)), del ? 204 : 201);
}

}  // namespace

kj::Promise<http_reply> put_or_delete(api_env& env, const api_request& req) {
  const auto& what = req.path[0];
  if ((what == "queues" || what == "exchanges") && req.path.size() != 3)
    return error_reply(405, "Method Not Allowed", "name a " + what.substr(0, what.size() - 1));
  if (what == "queues") return queue_change(env, req);
  if (what == "exchanges") return exchange_change(env, req);
  if (what == "bindings" && req.method == kj::HttpMethod::DELETE) return binding_delete(env, req);
  if ((what == "vhosts" || what == "users") && req.path.size() == 2) return admin_change(env, req);
  if (what == "permissions") return admin_change(env, req);
  return error_reply(405, "Method Not Allowed", "cannot change " + what + " this way");
}

// POST /bindings/{vhost}/e/{source}/{q|e}/{destination}: 201 with the new binding's location.
kj::Promise<http_reply> post_binding(api_env& env, const api_request& req) {
  if (req.path.size() != 6 || req.path[2] != "e" || (req.path[4] != "q" && req.path[4] != "e"))
    return error_reply(405, "Method Not Allowed", "POST to /api/bindings/{vhost}/e/{ex}/q/{q}");
  auto body = body_json(req);
  binding_spec b{exchange_from_path(req.path[3]), req.path[5], text(body, "routing_key"),
                 arguments(body), req.path[4] == "e"};
  auto key = b.key.empty() ? std::string("~") : b.key;
  return as_user(env, req, req.path[1],
                 [b](connection_ref& c, uint64_t id, uint16_t ch) { c.bind(id, ch, b); })
      .then([key](request_answer) {
        http_reply r = no_content();
        r.status = 201;
        r.headers.push_back({"Location", key});
        return r;
      });
}

kj::Promise<http_reply> post_definitions(api_env& env, const api_request& req) {
  size_t skipped = 0;
  auto defs = definitions_from_json(body_json(req), skipped);
  return done(
      as_user(env, req, req.home_vhost(),
              [defs](connection_ref& c, uint64_t id, uint16_t) { c.import_definitions(id, defs); }),
      204);
}

}  // namespace warren::net::http
