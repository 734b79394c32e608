// Messages through the management API: publish, get (with RabbitMQ's ack modes), peek (ready
// messages read without taking them) and purge.
#include "net/http/api_json.hpp"
#include "net/http/api_routes.hpp"

#include "core/definitions_json.hpp"
#include "core/message_id.hpp"

#include <kj/encoding.h>

#include <stdexcept>

namespace warren::net::http {

using json = nlohmann::json;

namespace {

constexpr uint32_t max_messages_per_call = 1000;

std::string decode_payload(const json& body) {
  auto payload = body.value("payload", std::string());
  auto encoding = body.value("payload_encoding", std::string("string"));
  if (encoding == "string") return payload;
  if (encoding != "base64")
    throw std::invalid_argument("payload_encoding \"" + encoding + "\" is not string or base64");
  auto bytes = kj::decodeBase64(kj::arrayPtr(payload.data(), payload.size()));
  if (bytes.hadErrors) throw std::invalid_argument("payload is not valid base64");
  return std::string(bytes.begin(), bytes.end());
}

// The properties a management-API publish gives, remembering those set to their default value
// (as an AMQP publisher's are).
message_properties properties_from(const json& j) {
  namespace f = property_flag;
  message_properties p;
  if (j.is_null()) return p;
  if (!j.is_object()) throw std::invalid_argument("\"properties\" is not an object");
  auto given = [&](const char* key, uint16_t flag) {
    if (j.contains(key)) p.set_to_default |= flag;  // cleared below for those with a value
  };
  p.persistent = j.value("delivery_mode", 1) == 2;
  given("delivery_mode", f::delivery_mode);
  if (j.contains("headers")) p.headers = table_from_json(j["headers"], "properties.headers");
  given("headers", f::headers);
  for (const auto& t : text_properties) {
    if (t.field == &message_properties::user_id) continue;  // taken from AMQP publishers only
    p.*t.field = j.value(t.name, std::string());
    given(t.name, t.flag);
  }
  p.priority = static_cast<uint8_t>(j.value("priority", 0));
  given("priority", f::priority);
  p.timestamp = j.value("timestamp", int64_t{0});
  given("timestamp", f::timestamp);
  // Only what is at its default needs remembering; the rest is present anyway.
  auto keep = p.set_to_default;
  p.set_to_default = 0;
  p.set_to_default = keep & ~present_properties(p);
  return p;
}

uint32_t message_count(const json& body) {
  auto v = body.find("count");
  int64_t n = 1;
  if (v != body.end() && v->is_number_integer()) n = v->get<int64_t>();
  if (v != body.end() && v->is_string()) n = std::atoll(v->get<std::string>().c_str());
  if (n < 1 || n > max_messages_per_call)
    throw std::invalid_argument("count must be from 1 to " + std::to_string(max_messages_per_call));
  return static_cast<uint32_t>(n);
}

settle_kind settle_of(const std::string& ackmode) {
  if (ackmode == "ack_requeue_true" || ackmode == "reject_requeue_true")
    return settle_kind::requeue;
  if (ackmode == "ack_requeue_false") return settle_kind::ack;
  if (ackmode == "reject_requeue_false") return settle_kind::reject;
  throw std::invalid_argument("ackmode \"" + ackmode + "\" is not one of ack_requeue_true, " +
                              "ack_requeue_false, reject_requeue_true, reject_requeue_false");
}

using taken = std::shared_ptr<std::vector<delivery>>;

kj::Promise<void> take(session_ptr s, std::string queue, taken got, uint32_t left) {
  if (left == 0) return kj::READY_NOW;
  return call(s,
              [queue](connection_ref& c, uint64_t id, uint16_t ch) { c.get(id, ch, queue, false); })
      .then([s, queue, got, left](request_answer answer) -> kj::Promise<void> {
        if (std::holds_alternative<std::monostate>(answer)) return kj::READY_NOW;
        got->push_back(std::move(answer_as<delivery>(answer)));
        return take(s, queue, got, left - 1);
      });
}

}  // namespace

kj::Promise<http_reply> publish(api_env& env, const api_request& req) {
  auto body = body_json(req);
  auto m = std::make_shared<message>();
  m->id = next_message_id();
  m->exchange = exchange_from_path(req.path[2]);
  m->routing_key = body.value("routing_key", std::string());
  m->body = decode_payload(body);
  m->set_properties(properties_from(body.value("properties", json())));
  std::vector<message_ptr> batch{m};
  return as_user(env, req, req.path[1],
                 [batch](connection_ref& c, uint64_t id, uint16_t ch) { c.publish(id, ch, batch); })
      .then([](request_answer answer) {
        const auto& outcomes = answer_as<std::vector<publish_outcome>>(answer);
        bool routed = !outcomes.empty() && outcomes[0] == publish_outcome::routed;
        return json_reply({{"routed", routed}});
      });
}

kj::Promise<http_reply> get_messages(api_env& env, const api_request& req) {
  auto body = body_json(req);
  auto count = message_count(body);
  auto kind = settle_of(body.value("ackmode", std::string("ack_requeue_true")));
  bool base64 = body.value("encoding", std::string("auto")) == "base64";
  auto queue = req.path[2];
  auto got = std::make_shared<std::vector<delivery>>();
  return open_session(env, req, req.path[1]).then([=](session_ptr s) {
    return take(s, queue, got, count)
        .then([s, got, kind]() -> kj::Promise<request_answer> {
          if (got->empty()) return request_answer();
          return call(s, [kind](connection_ref& c, uint64_t id, uint16_t ch) {
            c.settle(id, ch, 0, true, kind);
          });
        })
        .then([got, base64](request_answer) {
          json out = json::array();
          for (const auto& d : *got) out.push_back(message_json(d, d.message_count, base64));
          return json_reply(out);
        });
  });
}

kj::Promise<http_reply> peek(api_env& env, const api_request& req) {
  uint64_t from = req.number("from", 0);
  auto count = req.number("count", 10);
  if (count < 1 || count > max_messages_per_call)
    throw std::invalid_argument("count must be from 1 to " + std::to_string(max_messages_per_call));
  bool base64 = req.query.count("encoding") != 0 && req.query.at("encoding") == "base64";
  auto queue = req.path[2];
  return as_user(env, req, req.path[1],
                 [=](connection_ref& c, uint64_t id, uint16_t ch) {
                   c.peek(id, ch, queue, from, static_cast<uint32_t>(count));
                 })
      .then([base64](request_answer answer) {
        json out = json::array();
        for (const auto& d : answer_as<std::vector<delivery>>(answer)) {
          auto row = message_json(d, 0, base64);
          row.erase("message_count");
          row["position"] = d.tag;
          out.push_back(std::move(row));
        }
        return json_reply(out);
      });
}

kj::Promise<http_reply> purge(api_env& env, const api_request& req) {
  auto queue = req.path[2];
  return as_user(env, req, req.path[1],
                 [queue](connection_ref& c, uint64_t id, uint16_t ch) { c.purge(id, ch, queue); })
      .then([](request_answer) { return no_content(); });
}

}  // namespace warren::net::http
