// http_reply: what the management door answers, and the failures it answers with, in the shape
// RabbitMQ's management API uses: {"error": ..., "reason": ...} with its status codes.
#pragma once

#include "actors/common/broker_error.hpp"

#include <kj/exception.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace warren::net::http {

struct http_reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A JSON body; invalid UTF-8 in strings (message bodies, headers) is replaced, never fatal.
http_reply json_reply(const nlohmann::json& j, unsigned status = 200);
/// 204, RabbitMQ's answer to a PUT or DELETE that did what was asked.
http_reply no_content();
/// RabbitMQ's error object: 400 bad_request, 401 not_authorised, 404 "Object Not Found", ...
http_reply error_reply(unsigned status, const std::string& error, const std::string& reason);
/// A broker failure (a refused declaration, a missing queue) as RabbitMQ's API reports it.
http_reply failure_reply(const broker_failure& f);
/// A rejected promise: the broker's "CODE: text" description read back, else a 500.
http_reply exception_reply(const kj::Exception& e);

/// The reason phrase of a status code.
const char* status_text(unsigned status);

}  // namespace warren::net::http
