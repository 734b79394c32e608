// SASL for AMQP 0-9-1's connection.start-ok: the mechanisms offered (PLAIN, AMQPLAIN) and the
// credentials read from a client's response. Pure: the session decides what to do with them.
#pragma once

#include <string>

namespace warren::amqp {

/// Offered in connection.start, in order of preference.
constexpr const char* sasl_mechanisms = "PLAIN AMQPLAIN";

struct sasl_credentials {
  std::string user;
  std::string password;
};

/// Reads `response` for `mechanism` into `out`; returns what is wrong with it, or empty.
/// PLAIN is "authzid NUL user NUL password"; AMQPLAIN is a field table without its length,
/// holding LOGIN and PASSWORD.
std::string read_sasl_response(const std::string& mechanism, const std::string& response,
                               sasl_credentials& out);

}  // namespace warren::amqp
