#include "net/http/http_reply.hpp"

#include "core/reply_code.hpp"

namespace warren::net::http {

http_reply json_reply(const nlohmann::json& j, unsigned status) {
  http_reply r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

http_reply no_content() {
  http_reply r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

http_reply error_reply(unsigned status, const std::string& error, const std::string& reason) {
  return json_reply({{"error", error}, {"reason", reason}}, status);
}

http_reply failure_reply(const broker_failure& f) {
  switch (f.code) {
    case reply_code::not_found:
      return error_reply(404, "Object Not Found", f.text);
    case reply_code::access_refused:
    case reply_code::not_allowed:
      return error_reply(401, "not_authorised", f.text);
    case reply_code::resource_locked:
    case reply_code::precondition_failed:
    case reply_code::syntax_error:
    case reply_code::command_invalid:
    case reply_code::resource_error:
      return error_reply(400, "bad_request", f.text);
    default:
      return error_reply(500, "internal_server_error", f.text);
  }
}

http_reply exception_reply(const kj::Exception& e) {
  std::string text(e.getDescription().cStr());
  // rpc_session and node_query reject with the broker's own "CODE: text" (maybe behind kj's
  // "remote exception: " when it crossed a connection).
  auto colon = text.find(": ");
  reply_code code;
  if (colon != std::string::npos && parse_reply_code_name(text.substr(0, colon), code))
    return failure_reply({code, text.substr(colon + 2)});
  return error_reply(500, "internal_server_error", text);
}

const char* status_text(unsigned status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 500:
      return "Internal Server Error";
    default:
      return "Unknown";
  }
}

}  // namespace warren::net::http
