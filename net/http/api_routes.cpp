#include "net/http/api_routes.hpp"

#include "core/message.hpp"

#include <stdexcept>

namespace warren::net::http {

using json = nlohmann::json;

namespace {

bool is(const api_request& req, kj::HttpMethod m, const char* what, size_t min, size_t max) {
  return req.method == m && req.path[0] == what && req.path.size() >= min && req.path.size() <= max;
}

kj::Promise<http_reply> whoami(const api_request& req) {
  return json_reply({{"name", req.user}, {"tags", req.tags}});
}

kj::Promise<http_reply> get(api_env& env, const api_request& req) {
  const auto& what = req.path[0];
  auto n = req.path.size();
  if (what == "overview" && n == 1) return get_overview(env, req);
  if (what == "whoami" && n == 1) return whoami(req);
  if (what == "nodes") return get_nodes(env, req);
  if (what == "vhosts" && n <= 2) return get_vhosts(env, req);
  if (what == "queues" && n == 4 && req.path[3] == "messages") return peek(env, req);
  if (what == "queues" && n == 4 && req.path[3] == "bindings") return get_queue_bindings(env, req);
  if (what == "queues" && n <= 3) return get_queues(env, req);
  if (what == "connections" && n <= 2) return get_connections(env, req);
  if ((what == "exchanges" && n <= 3) || (what == "bindings" && n <= 6) ||
      (what == "consumers" && n <= 2) || (what == "channels" && n == 1))
    return get_vhost_listing(env, req);
  if ((what == "users" && n <= 2) || (what == "permissions" && n <= 3) ||
      (what == "definitions" && n == 1))
    return get_admin_listing(env, req);
  return error_reply(404, "Object Not Found", "Not Found");
}

kj::Promise<http_reply> dispatch(api_env& env, const api_request& req) {
  using M = kj::HttpMethod;
  if (req.path.empty()) return error_reply(404, "Object Not Found", "Not Found");
  if (req.method == M::GET) return get(env, req);
  if (is(req, M::DELETE, "queues", 4, 4) && req.path[3] == "contents") return purge(env, req);
  if (is(req, M::POST, "queues", 4, 4) && req.path[3] == "get") return get_messages(env, req);
  if (is(req, M::POST, "exchanges", 4, 4) && req.path[3] == "publish") return publish(env, req);
  if (is(req, M::POST, "bindings", 2, 6)) return post_binding(env, req);
  if (is(req, M::POST, "definitions", 1, 1)) return post_definitions(env, req);
  if (req.method == M::PUT || req.method == M::DELETE) return put_or_delete(env, req);
  return error_reply(405, "Method Not Allowed", "Method Not Allowed");
}

}  // namespace

json body_json(const api_request& req) {
  if (req.body.empty()) return json::object();
  // Nesting is capped while parsing, so nothing deeper than a storable field table is built: the
  // body's object, a property object and a table hold the deepest field values.
  constexpr int max_json_depth = max_field_depth + 4;
  json::parser_callback_t cap_depth = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth > max_json_depth)
      throw std::invalid_argument("the request body nests deeper than " +
                                  std::to_string(max_json_depth) + " levels");
    return true;
  };
  auto j = json::parse(req.body, cap_depth, false);
  if (j.is_discarded()) throw std::invalid_argument("the request body is not valid JSON");
  if (!j.is_object()) throw std::invalid_argument("the request body is not a JSON object");
  return j;
}

kj::Promise<http_reply> route(api_env& env, const api_request& req) {
  kj::Promise<http_reply> answer = nullptr;
  try {
    answer = dispatch(env, req);
  } catch (const std::invalid_argument& e) {
    return error_reply(400, "bad_request", e.what());
  } catch (const nlohmann::json::exception& e) {
    return error_reply(400, "bad_request", e.what());
  }
  return answer.catch_([](kj::Exception&& e) { return exception_reply(e); });
}

}  // namespace warren::net::http
