// access_rights: a user's permissions in one vhost, compiled, and the checks RabbitMQ's access
// control guide specifies: declare and delete need configure on the resource, publishing needs
// write on the exchange, consuming, getting and purging need read on the queue, and a binding
// needs write on its destination and read on its source exchange. The default exchange is
// "amq.default" here, as in RabbitMQ.
//
// Patterns are RE2 expressions (RabbitMQ's are PCRE; the two agree except for backreferences and
// lookaround, which RE2 refuses when the pattern is set). RE2 runs in time linear in the name
// and never recurses on it, so a hostile name cannot overflow the stack; names and patterns are
// matched as bytes (Latin-1), as before.
#pragma once

#include "core/declarations.hpp"

#include <memory>
#include <string>

namespace re2 {
class RE2;
}

namespace warren {

enum class access_kind : uint8_t { configure, write, read };

/// Longest permission pattern taken, in bytes.
constexpr size_t max_permission_pattern_bytes = 4096;

/// What is wrong with `pattern` as a permission, or empty.
std::string check_permission_pattern(const std::string& pattern);

class access_rights {
 public:
  access_rights() = default;  // nothing allowed
  explicit access_rights(const permission_record& p);

  /// Empty when allowed; else RabbitMQ's "access to queue 'q' in vhost '/' refused for user
  /// 'u'".
  std::string check(access_kind kind, const char* resource, const std::string& name) const;

 private:
  // Null: an empty pattern (or one RE2 cannot compile, stored before it was checked), which
  // matches nothing. Shared: rights are copied into every connection, and RE2 is thread-safe.
  using pattern = std::shared_ptr<const re2::RE2>;
  static pattern compile(const std::string& text);
  const pattern& of(access_kind kind) const;

  std::string user_, vhost_;
  pattern configure_, write_, read_;
};

}  // namespace warren
