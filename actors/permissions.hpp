// access_rights: a user's permissions in one vhost, compiled, and the checks RabbitMQ's access
// control guide specifies: declare and delete need configure on the resource, publishing needs
// write on the exchange, consuming, getting and purging need read on the queue, and a binding
// needs write on its destination and read on its source exchange. The default exchange is
// "amq.default" here, as in RabbitMQ.
#pragma once

#include "core/declarations.hpp"

#include <regex>
#include <string>

namespace warren {

enum class access_kind : uint8_t { configure, write, read };

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
  struct pattern {
    bool any = false;  // false: an empty pattern, which matches nothing
    std::regex re;
  };
  static pattern compile(const std::string& text);
  const pattern& of(access_kind kind) const;

  std::string user_, vhost_;
  pattern configure_, write_, read_;
};

}  // namespace warren
