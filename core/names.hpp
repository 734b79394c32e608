// Validation of names (vhosts, exchanges, queues) and keys (routing and binding keys).
//
// Each check returns an empty string when the input is fine, otherwise a sentence saying what is
// wrong with it, ready to follow "PRECONDITION_FAILED: " or similar. Names are 1-255 bytes of
// valid UTF-8 without control characters; keys are 0-255 bytes with the same character rules.
#pragma once

#include <string>
#include <string_view>

namespace warren {

/// `what` is the kind of name for the message: "queue name", "exchange name", "vhost name".
std::string check_name(std::string_view what, std::string_view name);

/// Routing keys and binding keys.
std::string check_key(std::string_view what, std::string_view key);

/// Names starting with "amq." belong to the server.
bool is_reserved_name(std::string_view name);

/// `prefix` followed by 22 random characters of [A-Za-z0-9_-]: server-generated queue names
/// ("amq.gen-") and consumer tags ("amq.ctag-").
std::string generated_name(std::string_view prefix);

/// Quotes a name for an error message, escaping control and non-printable bytes.
std::string quote(std::string_view name);

}  // namespace warren
