#include "net/amqp/sasl.hpp"

#include "net/amqp/codec.hpp"

namespace warren::amqp {

namespace {

std::string read_plain(const std::string& response, sasl_credentials& out) {
  auto first = response.find('\0');
  auto second = first == std::string::npos ? first : response.find('\0', first + 1);
  if (second == std::string::npos) return "PLAIN response is not authzid NUL user NUL password";
  out.user = response.substr(first + 1, second - first - 1);
  out.password = response.substr(second + 1);
  return {};
}

std::string read_amqplain(const std::string& response, sasl_credentials& out) {
  writer w;
  w.long_string(response);  // a table without its length: give it one
  table t;
  try {
    t = reader(w.bytes()).field_table();
  } catch (const protocol_error& e) {
    return std::string("AMQPLAIN response is not a field table: ") + e.what();
  }
  for (const auto& [key, v] : t) {
    if (key == "LOGIN") out.user = v.bytes;
    if (key == "PASSWORD") out.password = v.bytes;
  }
  return {};
}

}  // namespace

std::string read_sasl_response(const std::string& mechanism, const std::string& response,
                               sasl_credentials& out) {
  out = {};
  if (mechanism == "PLAIN") return read_plain(response, out);
  if (mechanism == "AMQPLAIN") return read_amqplain(response, out);
  return "authentication mechanism '" + mechanism + "' is not supported (PLAIN and AMQPLAIN are)";
}

}  // namespace warren::amqp
