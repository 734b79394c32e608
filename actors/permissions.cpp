#include "actors/permissions.hpp"

#include "core/names.hpp"

namespace warren {

std::string check_permission_pattern(const std::string& pattern) {
  try {
    std::regex re(pattern);
  } catch (const std::regex_error& e) {
    return "permission " + quote(pattern) + " is not a valid regular expression (" + e.what() + ")";
  }
  return {};
}

access_rights::pattern access_rights::compile(const std::string& text) {
  pattern p;
  if (text.empty()) return p;
  p.any = true;
  p.re = std::regex(text);
  return p;
}

access_rights::access_rights(const permission_record& p)
    : user_(p.user),
      vhost_(p.vhost),
      configure_(compile(p.configure)),
      write_(compile(p.write)),
      read_(compile(p.read)) {}

const access_rights::pattern& access_rights::of(access_kind kind) const {
  switch (kind) {
    case access_kind::configure:
      return configure_;
    case access_kind::write:
      return write_;
    default:
      return read_;
  }
}

std::string access_rights::check(access_kind kind, const char* resource,
                                 const std::string& name) const {
  const auto& target = name.empty() && std::string(resource) == "exchange" ? "amq.default" : name;
  const auto& p = of(kind);
  if (p.any && std::regex_search(target, p.re)) return {};
  static const char* verbs[] = {"configure", "write", "read"};
  return std::string(verbs[static_cast<int>(kind)]) + " access to " + resource + " " +
         quote(target) + " in vhost " + quote(vhost_) + " refused for user " + quote(user_);
}

}  // namespace warren
