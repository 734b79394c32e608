// api_routes: the management API, RabbitMQ's paths under /api. route() answers one request
// whose user has been checked; every failure becomes RabbitMQ's error JSON.
#pragma once

#include "net/http/api_context.hpp"

namespace warren::net::http {

kj::Promise<http_reply> route(api_env& env, const api_request& req);

// The handlers, by what they touch (api_read.cpp, api_write.cpp, api_messages.cpp).
kj::Promise<http_reply> get_overview(api_env& env, const api_request& req);
kj::Promise<http_reply> get_nodes(api_env& env, const api_request& req);
kj::Promise<http_reply> get_vhosts(api_env& env, const api_request& req);
kj::Promise<http_reply> get_queues(api_env& env, const api_request& req);
kj::Promise<http_reply> get_connections(api_env& env, const api_request& req);
/// exchanges, bindings, consumers or channels of one vhost (path[1]) or of every visible one
kj::Promise<http_reply> get_vhost_listing(api_env& env, const api_request& req);
kj::Promise<http_reply> get_admin_listing(api_env& env, const api_request& req);
/// /queues/{vhost}/{queue}/bindings: the bindings to that queue
kj::Promise<http_reply> get_queue_bindings(api_env& env, const api_request& req);

kj::Promise<http_reply> put_or_delete(api_env& env, const api_request& req);
kj::Promise<http_reply> post_binding(api_env& env, const api_request& req);
kj::Promise<http_reply> post_definitions(api_env& env, const api_request& req);

kj::Promise<http_reply> publish(api_env& env, const api_request& req);
kj::Promise<http_reply> get_messages(api_env& env, const api_request& req);
kj::Promise<http_reply> peek(api_env& env, const api_request& req);
kj::Promise<http_reply> purge(api_env& env, const api_request& req);

/// The JSON body of a request; throws std::invalid_argument when it is not a JSON object.
nlohmann::json body_json(const api_request& req);

}  // namespace warren::net::http
