// raw_client: a TCP connection that speaks AMQP 0-9-1 by hand, through the project's codec, for
// tests that send what real clients send in one write, or what no client should send.
#pragma once

#include "net/amqp/codec.hpp"
#include "net/amqp/frame.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace warren::test {

using namespace warren::amqp;

// Guards against a hung test only; never a performance expectation.
constexpr auto patience = std::chrono::seconds(30);

// A client's connection.close: 200, "bye", no failing method.
inline writer client_close_method() {
  auto close = method_payload({10, 50});
  close.short_uint(200);
  close.short_string("bye");
  close.short_uint(0);
  close.short_uint(0);
  return close;
}

class raw_client {
 public:
  // Fails the test unless the connection is made; with `may_fail`, a failed connect is kept
  // instead, for try_handshake to report (callers that retry while the node sheds connections).
  explicit raw_client(uint16_t port, bool may_fail = false) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      connect_error_ = "connect to port " + std::to_string(port) + ": " + std::strerror(errno);
    BOOST_REQUIRE_MESSAGE(may_fail || connect_error_.empty(), connect_error_);
    int one = 1;  // each method goes out at once, as clients send them
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~raw_client() { close(fd_); }

  void send(const std::string& bytes) { BOOST_REQUIRE(sent_whole(bytes)); }
  void send_method(uint16_t channel, writer w) { send(method_frame(channel, w)); }
  void close_write() { shutdown(fd_, SHUT_WR); }

  // The next frame, or nullopt once the node closed the socket.
  std::optional<frame> next_frame() {
    for (;;) {
      size_t used = 0;
      if (auto f = parse_frame(buffer_, 0, used)) {
        buffer_.erase(0, used);
        return f;
      }
      if (!read_some()) return std::nullopt;
    }
  }

  /// errno of the read that ended the input (0: the node closed the socket cleanly).
  int read_error() const { return read_error_; }

  // Reads until the node closes the socket; returns what came.
  std::string read_to_end() {
    while (read_some()) {
    }
    return std::exchange(buffer_, {});
  }

  // The next method frame's id (skipping heartbeats), with a reader over its arguments.
  std::pair<method_id, std::string> next_method() {
    auto m = try_next_method();
    BOOST_REQUIRE_MESSAGE(m.has_value(), "the node closed the socket");
    return *m;
  }

  // The next method, or nullopt once the node closed the socket: for callers that retry.
  std::optional<std::pair<method_id, std::string>> try_next_method() {
    for (;;) {
      auto f = next_frame();
      if (!f) return std::nullopt;
      if (f->type != frame_type::method) continue;
      reader r(f->payload);
      method_id id{r.short_uint(), r.short_uint()};
      return std::pair{id, f->payload.substr(4)};
    }
  }

  // Protocol header, start-ok as guest, tune-ok, open "/".
  void handshake(uint16_t heartbeat = 0, bool wants_blocked = false) {
    std::string failure = try_handshake(heartbeat, wants_blocked);
    BOOST_REQUIRE_MESSAGE(failure.empty(), failure);
  }

  // The handshake without failing the test: what went wrong, or "" once the connection is open.
  // For callers that retry while the node may still shed connections (out of descriptors).
  std::string try_handshake(uint16_t heartbeat = 0, bool wants_blocked = false) {
    const char* closed = "the node closed the socket during the handshake";
    if (!connect_error_.empty()) return connect_error_;
    if (!sent_whole(std::string(protocol_header))) return closed;
    if (auto why = expect_method({10, 10}, "connection.start"); !why.empty()) return why;
    auto ok = method_payload({10, 11});
    table capabilities{{"connection.blocked", value::of_bool(wants_blocked)}};
    ok.field_table({{"capabilities", value::of_table(capabilities)}});
    ok.short_string("PLAIN");
    ok.long_string(std::string("\0guest\0guest", 12));
    ok.short_string("en_US");
    if (!sent_whole(method_frame(0, ok))) return closed;
    if (auto why = expect_method({10, 30}, "connection.tune"); !why.empty()) return why;
    auto tune = method_payload({10, 31});
    tune.short_uint(0);
    tune.long_uint(131072);
    tune.short_uint(heartbeat);
    if (!sent_whole(method_frame(0, tune))) return closed;
    auto open = method_payload({10, 40});
    open.short_string("/");
    open.short_string("");
    open.bits({false});
    if (!sent_whole(method_frame(0, open))) return closed;
    return expect_method({10, 41}, "connection.open-ok");
  }

  void open_channel(uint16_t id) {
    auto open = method_payload({20, 10});
    open.short_string("");
    send_method(id, std::move(open));
    BOOST_REQUIRE((next_method().first == method_id{20, 11}));
  }

  // Waits for connection.close and returns its reply code.
  uint16_t expect_connection_close() {
    for (;;) {
      auto [id, args] = next_method();
      if (id == method_id{10, 50}) return reader(args).short_uint();
    }
  }

 private:
  bool sent_whole(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  static std::string method_frame(uint16_t channel, writer& w) {
    std::string out;
    write_frame(out, frame_type::method, channel, w.bytes());
    return out;
  }

  // "" when the next method is `want`, else what came instead.
  std::string expect_method(method_id want, const char* name) {
    auto m = try_next_method();
    if (!m) return std::string("the node closed the socket before ") + name;
    if (m->first == want) return "";
    return std::string("expected ") + name + ", got method " + std::to_string(m->first.class_id) +
           "." + std::to_string(m->first.method);
  }

  bool read_some() {
    pollfd p{fd_, POLLIN, 0};
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(patience).count();
    BOOST_REQUIRE_MESSAGE(poll(&p, 1, static_cast<int>(ms)) == 1, "nothing from the node");
    char buf[65536];
    auto n = ::read(fd_, buf, sizeof buf);
    read_error_ = n < 0 ? errno : 0;
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  int read_error_ = 0;
  std::string connect_error_;  // why the connection was not made ("" once it was)
  std::string buffer_;
};

// Logs in as guest and asks to open vhost "/": 0 when it opened, else the reply code of the
// connection.close that refused it.
inline uint16_t amqp_open_refusal(raw_client& c, const std::string& user = "guest",
                                  const std::string& password = "guest") {
  c.send(std::string(protocol_header));
  BOOST_REQUIRE((c.next_method().first == method_id{10, 10}));
  auto ok = method_payload({10, 11});
  ok.field_table({});
  ok.short_string("PLAIN");
  ok.long_string(std::string(1, '\0') + user + std::string(1, '\0') + password);
  ok.short_string("en_US");
  c.send_method(0, std::move(ok));
  BOOST_REQUIRE((c.next_method().first == method_id{10, 30}));
  auto tune = method_payload({10, 31});
  tune.short_uint(0);
  tune.long_uint(131072);
  tune.short_uint(0);
  c.send_method(0, std::move(tune));
  auto open = method_payload({10, 40});
  open.short_string("/");
  open.short_string("");
  open.bits({false});
  c.send_method(0, std::move(open));
  auto [id, args] = c.next_method();
  if (id == method_id{10, 41}) return 0;
  BOOST_REQUIRE((id == method_id{10, 50}));
  return reader(args).short_uint();
}

inline std::string frame_bytes(uint8_t type, uint16_t channel, const std::string& payload,
                               uint8_t end = 0xce) {
  writer w;
  w.octet(type);
  w.short_uint(channel);
  w.long_uint(static_cast<uint32_t>(payload.size()));
  w.raw(payload);
  w.octet(end);
  return w.take();
}

}  // namespace warren::test
