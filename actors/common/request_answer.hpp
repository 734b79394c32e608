// request_answer: what the connection actor answers a front door's request with
// (client_link::reply), as one closed set of types. An answer is one value of one of these types,
// or std::monostate ("done", nothing to say); connection_protocol.hpp names each request's answer
// ("-> T", "-> ()").
//
// The actor builds answers with make_answer, which accepts exactly these types: answering with
// any other fails to compile, so a new answer type is added here first. Doors read answers with
// answer_as<T>. An answer of another type than T means the actor and a door disagree about a
// request, a bug of ours: answer_as throws wrong_answer (INTERNAL_ERROR naming both types), which
// fails that request (the AMQP door closes the connection with it, as AMQP has INTERNAL_ERROR
// close connections) rather than reading the wrong type or ending the process.
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/cluster_protocol.hpp"
#include "actors/common/delivery.hpp"
#include "actors/common/protocol.hpp"
#include "core/declarations.hpp"
#include "core/outcomes.hpp"

#include <cxxabi.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

namespace warren {

using request_answer = std::variant<std::monostate,                  // done, nothing to say
                                    uint32_t,                        // messages purged or deleted
                                    std::string,                     // consumer tag, grant token
                                    delivery,                        // get
                                    std::vector<delivery>,           // peek
                                    std::vector<publish_outcome>,    // publish
                                    queue_info,                      // queue declare
                                    stream_reply,                    // a stream's commands
                                    lookup_reply,                    // lookup by message id
                                    grant_record,                    // login by a grant's token
                                    vhost_limits,                    // a vhost's limits
                                    definitions,                     // export
                                    node_stats_info,                 // node statistics
                                    std::vector<std::string>,        // vhosts
                                    std::vector<user_record>,        // users
                                    std::vector<permission_record>,  // permissions
                                    std::vector<grant_record>,       // grants
                                    std::vector<connection_info>,    // connections
                                    std::vector<node_info>,          // cluster members
                                    std::vector<exchange_info>,      // the vhost's exchanges
                                    std::vector<queue_info>,         // the vhost's queues
                                    std::vector<binding_info>,       // the vhost's bindings
                                    std::vector<consumer_info>>;     // the vhost's consumers

/// Whether T is exactly one of request_answer's types.
template <class T, class Answer = request_answer>
struct is_answer_type;

template <class T, class... Ts>
struct is_answer_type<T, std::variant<Ts...>> : std::disjunction<std::is_same<T, Ts>...> {};

/// "Done", nothing to say.
inline request_answer make_answer() {
  return {};
}

/// An answer holding `x` as its own type: no conversion may turn it into another alternative
/// (a uint64_t into the uint32_t, say).
template <class T>
request_answer make_answer(T&& x) {
  using type = std::decay_t<T>;
  static_assert(is_answer_type<type>::value, "not an answer type: add it to request_answer");
  return request_answer(std::in_place_type<type>, std::forward<T>(x));
}

/// What answer_as throws when an answer holds another type than the one asked for.
class wrong_answer : public std::logic_error {
 public:
  explicit wrong_answer(broker_failure f) : std::logic_error(to_string(f)), failure(std::move(f)) {}

  broker_failure failure;  // INTERNAL_ERROR naming both types
};

/// A type's name as written in C++ (GCC's and Clang's ABI), for wrong_answer's text.
inline std::string answer_type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 ? std::string(name.get()) : std::string(type.name());
}

/// Throws wrong_answer: `answer` holds another type than `expected`.
[[noreturn]] inline void throw_wrong_answer(const request_answer& answer,
                                            const std::type_info& expected) {
  auto held = std::visit([](const auto& x) { return answer_type_name(typeid(x)); }, answer);
  throw wrong_answer({reply_code::internal_error, "a request was answered with " + held +
                                                      " where " + answer_type_name(expected) +
                                                      " was expected"});
}

/// The value `answer` holds, of type T; throws wrong_answer if it holds another type.
template <class T>
T& answer_as(request_answer& answer) {
  static_assert(is_answer_type<T>::value, "not an answer type: add it to request_answer");
  if (auto* x = std::get_if<T>(&answer)) return *x;
  throw_wrong_answer(answer, typeid(T));
}

template <class T>
const T& answer_as(const request_answer& answer) {
  static_assert(is_answer_type<T>::value, "not an answer type: add it to request_answer");
  if (const auto* x = std::get_if<T>(&answer)) return *x;
  throw_wrong_answer(answer, typeid(T));
}

}  // namespace warren
