#include "net/http/management_server.hpp"

#include "actors/node/resource_alarm.hpp"
#include "core/log.hpp"
#include "net/http/api_routes.hpp"
#include "net/http/metrics.hpp"
#include "net/http/web_assets.hpp"

#include <kj/compat/http.h>
#include <kj/compat/url.h>
#include <kj/encoding.h>
#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <mutex>

namespace warren::net::http {

namespace {

/// Body limits by route: a definitions import is the largest expected; a publish carries one
/// message, base64 or text, in JSON; everything else is a small JSON object.
constexpr uint64_t definitions_body_bytes = 64 << 20;
constexpr uint64_t api_body_bytes = 1 << 20;

uint64_t body_limit(const api_request& req, uint64_t max_message_bytes) {
  const auto& p = req.path;  // without the leading "api"
  if (req.method == kj::HttpMethod::POST && p.size() == 1 && p[0] == "definitions")
    return definitions_body_bytes;
  if (req.method == kj::HttpMethod::POST && p.size() == 4 && p[0] == "exchanges" &&
      p[3] == "publish")
    return max_message_bytes / 3 * 4 + api_body_bytes;  // base64, and the JSON around it
  return api_body_bytes;
}

/// The resource alarm's last word, written by a watching actor, read by /metrics.
struct alarm_box {
  std::mutex mutex;
  alarm_status status;
};

caf::behavior alarm_watch(caf::event_based_actor* self, caf::actor alarm,
                          std::shared_ptr<alarm_box> box) {
  if (alarm)
    self->send(caf::actor_cast<resource_alarm_type>(alarm), subscribe_atom::value,
               caf::actor_cast<caf::actor>(self));
  return {[=](blocked_atom, bool blocked, const std::string& reason) {
    std::lock_guard<std::mutex> lock(box->mutex);
    box->status.memory = blocked && reason.rfind("memory", 0) == 0;
    box->status.disk = blocked && reason.rfind("disk", 0) == 0;
  }};
}

bool may_manage(const std::vector<std::string>& tags) {
  for (const char* t : {"management", "policymaker", "monitoring", "administrator"})
    if (std::find(tags.begin(), tags.end(), t) != tags.end()) return true;
  return false;
}

http_reply unauthorised(const std::string& reason) {
  auto r = error_reply(401, "not_authorised", reason);
  r.headers.push_back({"WWW-Authenticate", "Basic realm=\"Warren Management\""});
  return r;
}

// "Basic base64(user:password)" read into the request; false when it is not that.
bool read_basic_auth(kj::Maybe<kj::StringPtr> header, api_request& req) {
  KJ_IF_MAYBE (h, header) {
    std::string text(h->cStr());
    if (text.rfind("Basic ", 0) != 0) return false;
    auto decoded = kj::decodeBase64(kj::arrayPtr(text.data() + 6, text.size() - 6));
    if (decoded.hadErrors) return false;
    std::string pair(decoded.begin(), decoded.end());
    auto colon = pair.find(':');
    if (colon == std::string::npos) return false;
    req.user = pair.substr(0, colon);
    req.password = pair.substr(colon + 1);
    return true;
  }
  return false;
}

// The door's state on the loop thread.
struct door {
  door(caf::actor_system& system, caf::actor node, std::shared_ptr<transport::loop_bridge> bridge,
       std::string node_name, std::shared_ptr<alarm_box> alarms, kj::Timer& timer,
       door_limits limits)
      : env{system, node,
            bridge, std::make_shared<node_query>(system, node, bridge),
            {},     std::move(node_name),
            {}},
        alarms(std::move(alarms)),
        timer(timer),
        limits(limits) {
    env.alarms = [box = this->alarms]() {
      std::lock_guard<std::mutex> lock(box->mutex);
      std::vector<std::string> out;
      if (box->status.memory) out.push_back("memory");
      if (box->status.disk) out.push_back("disk");
      return out;
    };
    kj::HttpHeaderTable::Builder builder;
    authorization = builder.add("Authorization");
    headers = builder.build();
  }

  // Checks the credentials in the headers, before any of the body is read: the request with its
  // user's tags and vhosts filled in, or the 401 to answer.
  struct login_result {
    api_request req;
    bool refused = false;
    http_reply refusal;  // when refused
  };
  kj::Promise<login_result> login(api_request req, kj::Maybe<kj::StringPtr> auth_header) {
    if (!read_basic_auth(auth_header, req))
      return login_result{std::move(req), true, unauthorised("Login failed: give a user")};
    client_hello hello{"/",           req.user,          req.password, "management API",
                       req.peer.name, req.peer.loopback, true};
    return env.query
        ->ask<std::vector<std::string>, std::vector<std::string>>(auth_atom::value, hello)
        .then(
            [req](caf::message m) mutable -> login_result {
              req.tags = m.get_as<std::vector<std::string>>(0);
              req.vhosts = m.get_as<std::vector<std::string>>(1);
              if (!may_manage(req.tags))
                return {std::move(req), true,
                        unauthorised("Not management user: " + req.user +
                                     " has no tag that allows the management "
                                     "API")};
              return {std::move(req), false, {}};
            },
            [req](kj::Exception&& e) mutable -> login_result {
              std::string why(e.getDescription().cStr());
              auto colon = why.find(": ");
              return {std::move(req), true,
                      unauthorised("Login failed: " +
                                   (colon == std::string::npos ? why : why.substr(colon + 2)))};
            });
  }

  kj::Promise<http_reply> metrics() {
    return node_stats(env).then([this](node_stats_info stats) {
      alarm_status alarm;
      {
        std::lock_guard<std::mutex> lock(alarms->mutex);
        alarm = alarms->status;
      }
      http_reply r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = prometheus_text(stats, alarm, read_fd_usage(), publish_confirm_latency().read());
      return r;
    });
  }

  api_env env;
  std::shared_ptr<alarm_box> alarms;
  kj::Timer& timer;
  door_limits limits;  // max_message_bytes for publish bodies; the handshake timeout for bodies
  kj::HttpHeaderId authorization = kj::HttpHeaderId::HOST;
  kj::Own<kj::HttpHeaderTable> headers;
};

kj::Promise<void> send(kj::HttpService::Response& response, const kj::HttpHeaderTable& table,
                       http_reply r) {
  kj::HttpHeaders headers(table);
  if (!r.content_type.empty())
    headers.set(kj::HttpHeaderId::CONTENT_TYPE, kj::heapString(r.content_type));
  for (auto& [name, value] : r.headers) headers.add(kj::heapString(name), kj::heapString(value));
  auto body = kj::heapString(r.body);
  auto out = response.send(r.status, status_text(r.status), headers, uint64_t{body.size()});
  if (body.size() == 0) return kj::READY_NOW;
  auto written = out->write(body.begin(), body.size());
  return written.attach(kj::mv(out), kj::mv(body));
}

// One HTTP connection's service: knows its peer (the guest user may log in only over
// loopback, as on the other doors).
class service final : public kj::HttpService {
 public:
  // `metrics_door`: the --metrics-port listener, which serves /metrics and nothing else.
  service(door& d, peer_address peer, bool metrics_door)
      : door_(d), peer_(std::move(peer)), metrics_door_(metrics_door) {}

  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url,
                            const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                            Response& response) override {
    api_request req;
    req.method = method;
    req.peer = peer_;
    bool api = false;
    std::string page;
    KJ_IF_MAYBE (parsed, kj::Url::tryParse(url, kj::Url::HTTP_REQUEST)) {
      for (auto& segment : parsed->path) req.path.emplace_back(segment.cStr());
      for (auto& q : parsed->query) req.query[q.name.cStr()] = q.value.cStr();
    } else {
      return send(response, *door_.headers, error_reply(400, "bad_request", "unreadable URL"));
    }
    api = !req.path.empty() && req.path[0] == "api";
    if (api) req.path.erase(req.path.begin());
    page = req.path.empty() ? std::string("index.html") : req.path[0];
    kj::Maybe<kj::StringPtr> auth;
    KJ_IF_MAYBE (a, headers.get(door_.authorization)) auth = *a;
    kj::Promise<http_reply> reply = nullptr;
    bool metrics = !api && page == "metrics" && req.path.size() == 1;
    if (metrics_door_)
      reply = metrics && req.method == kj::HttpMethod::GET
                  ? door_.metrics()
                  : kj::Promise<http_reply>(
                        error_reply(404, "Object Not Found", "this port serves /metrics only"));
    else if (metrics)  // on the management port, behind the same login as the API
      reply = door_.login(std::move(req), auth).then([this](auto result) {
        if (result.refused) return kj::Promise<http_reply>(std::move(result.refusal));
        return door_.metrics();
      });
    else if (api)
      reply = door_.login(std::move(req), auth).then([this, &body](auto result) {
        if (result.refused) return kj::Promise<http_reply>(std::move(result.refusal));
        return with_body(std::move(result.req), body);
      });
    else
      reply = answer(std::move(req), page);  // pages take no body: none is read
    return reply.then(
        [this, &response](http_reply r) { return send(response, *door_.headers, std::move(r)); });
  }

 private:
  // Reads the body of a logged-in API request, within its route's size limit and the handshake
  // timeout, then routes it. A body announced too large is refused before a byte is read.
  kj::Promise<http_reply> with_body(api_request req, kj::AsyncInputStream& body) {
    auto limit = body_limit(req, door_.limits.max_message_bytes);
    auto too_large = [limit] {
      return error_reply(
          413, "bad_request",
          "the request body is larger than this route's " + std::to_string(limit) + " bytes");
    };
    KJ_IF_MAYBE (length, body.tryGetLength()) {
      if (*length > limit) return too_large();
    }
    auto read = body.readAllText(limit);
    if (door_.limits.handshake_timeout_ms > 0)  // 0: no limit, as on the other doors
      read = door_.timer.timeoutAfter(door_.limits.handshake_timeout_ms * kj::MILLISECONDS,
                                      kj::mv(read));
    return read.then(
        [this, req = std::move(req)](kj::String text) mutable -> kj::Promise<http_reply> {
          req.body = text.cStr();
          return route(door_.env, req);
        },
        [too_large](kj::Exception&& e) -> kj::Promise<http_reply> {
          std::string why(e.getDescription().cStr());
          if (why.find("timed out") != std::string::npos)
            return error_reply(408, "bad_request",
                               "the request body did not arrive within the time limit");
          return too_large();
        });
  }

 private:
  kj::Promise<http_reply> answer(api_request req, const std::string& page) {
    if (req.method != kj::HttpMethod::GET)
      return error_reply(405, "Method Not Allowed", "only GET outside /api");
    if (auto asset = find_asset(page); asset && req.path.size() <= 1) {
      http_reply r;
      r.content_type = std::string(asset->content_type) + "; charset=utf-8";
      r.body = std::string(asset->bytes, asset->size);
      return r;
    }
    return error_reply(404, "Object Not Found", "Not Found");
  }

  door& door_;
  peer_address peer_;
  bool metrics_door_;
};

}  // namespace

namespace {

// A listener's setup: one door per loop thread, one service per connection.
setup_function serve_http(caf::actor_system& system, caf::actor node, std::string node_name,
                          std::shared_ptr<alarm_box> alarms, door_limits limits,
                          bool metrics_door) {
  return [&system, node, node_name, alarms, limits, metrics_door](const loop_context& loop) {
    auto d =
        std::make_shared<door>(system, node, loop.bridge, node_name, alarms, loop.timer, limits);
    return serve_function([d, metrics_door](kj::Own<kj::AsyncIoStream> stream,
                                            const peer_address& peer) -> kj::Promise<void> {
      auto svc = kj::heap<service>(*d, peer, metrics_door);
      // Headers, too, must arrive within the handshake timeout (kj's default is 15 s).
      kj::HttpServerSettings settings;
      if (d->limits.handshake_timeout_ms > 0)
        settings.headerTimeout = d->limits.handshake_timeout_ms * kj::MILLISECONDS;
      auto server = kj::heap<kj::HttpServer>(d->timer, *d->headers, *svc, settings);
      auto done = server->listenHttp(kj::mv(stream));
      return done.attach(kj::mv(server), kj::mv(svc));
    });
  };
}

}  // namespace

struct management_server::impl {
  caf::actor_system& system;
  caf::actor node;
  caf::actor watcher;
  std::string node_name;
  std::shared_ptr<alarm_box> alarms = std::make_shared<alarm_box>();
  listener_thread listener{"HTTP"};
  listener_thread metrics_listener{"metrics"};
};

management_server::management_server(caf::actor_system& system, caf::actor node, caf::actor alarm,
                                     std::string node_name)
    : impl_(new impl{system, std::move(node), {}, std::move(node_name)}) {
  impl_->watcher = system.spawn(alarm_watch, std::move(alarm), impl_->alarms);
}

management_server::~management_server() {
  stop();
  caf::anon_send_exit(impl_->watcher, caf::exit_reason::user_shutdown);
}

uint16_t management_server::start(const std::string& bind_address, uint16_t port,
                                  const door_limits& limits) {
  auto& i = *impl_;
  return i.listener.start(bind_address, port,
                          serve_http(i.system, i.node, i.node_name, i.alarms, limits, false));
}

uint16_t management_server::start_metrics(const std::string& bind_address, uint16_t port) {
  auto& i = *impl_;
  return i.metrics_listener.start(
      bind_address, port, serve_http(i.system, i.node, i.node_name, i.alarms, door_limits{}, true));
}

void management_server::stop() {
  impl_->listener.stop();
  impl_->metrics_listener.stop();
}

}  // namespace warren::net::http
