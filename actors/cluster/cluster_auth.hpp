// How nodes prove to each other that they hold the cluster secret, without sending it: the asked
// node hands out a random nonce, the asking node answers with HMAC-SHA256(secret, purpose ‖
// nonce ‖ its name), and the asked node proves itself the same way over the asker's own nonce.
// A recorded exchange cannot be replayed (nonces are used once) and the secret never travels.
// What the proofs do not give is privacy: CAF's middleman carries messages in the clear, so the
// cluster port belongs on a private network.
#pragma once

#include <cstdint>
#include <string>

namespace warren {

/// 16 random bytes, hex: a challenge used once.
std::string make_nonce();

/// Hex HMAC-SHA256 of "purpose|nonce|name" keyed by `secret`.
std::string cluster_proof(const std::string& secret, const std::string& purpose,
                          const std::string& nonce, const std::string& name);

/// Compares two proofs in constant time.
bool proofs_equal(const std::string& a, const std::string& b);

/// Whether `host` is a loopback address (127.0.0.0/8, ::1) or "localhost". Names are not
/// resolved: any other name counts as not loopback.
bool is_loopback_host(const std::string& host);

/// A cluster address "HOST:PORT" taken apart; false (and `error` says why) when it is not one.
bool split_address(const std::string& address, std::string& host, uint16_t& port,
                   std::string& error);

}  // namespace warren
