// Capability grants' small parts: their tokens (random, shown in hex, stored only as a SHA-256),
// their kinds by name, and the permissions a connection logged in by a grant has.
#pragma once

#include "core/declarations.hpp"

#include <string>
#include <string_view>

namespace warren {

/// Bytes of a new token: enough that guessing one is hopeless.
inline constexpr size_t grant_token_size = 32;
/// Hex digits of a token that listings show and revoking accepts in place of the whole token.
inline constexpr size_t grant_prefix_digits = 8;

/// A new token from the system's random source (OpenSSL's RAND_bytes).
std::string new_grant_token();

/// The hex SHA-256 of `token`: the key its grant is stored and found under.
std::string grant_token_hash(std::string_view token);

/// "publisher" or "consumer".
const char* to_string(grant_kind kind);

/// A regular expression that matches `name` and nothing else.
std::string exact_name_pattern(const std::string& name);

/// The permissions of a connection logged in by `g`: write on its exchange (publisher) or read
/// on its queue (consumer), nothing else.
permission_record grant_permissions(const grant_record& g);

}  // namespace warren
