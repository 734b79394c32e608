// Passwords as RabbitMQ stores them (rabbit_password_hashing_sha256): a random 4-byte salt, and
// base64(salt ‖ SHA-256(salt ‖ password)), so users move between the two brokers unchanged.
#pragma once

#include "core/declarations.hpp"

#include <string>

namespace warren {

/// A fresh hash of `password` with a random salt.
std::string hash_password(const std::string& password);

/// The hash of `password` with the given 4-byte salt (for tests and imports).
std::string hash_password(const std::string& password, const std::string& salt);

/// Whether `password` matches `hash`; false for a hash that is not well formed.
bool password_matches(const std::string& hash, const std::string& password);

/// True for a hash in that format, or empty (RabbitMQ's user without a password, who cannot
/// log in with one).
bool is_password_hash(const std::string& hash);

bool has_tag(const user_record& user, const std::string& tag);

}  // namespace warren
