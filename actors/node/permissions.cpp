#include "actors/node/permissions.hpp"

#include "core/names.hpp"

#include <re2/re2.h>

namespace warren {

namespace {

re2::RE2::Options pattern_options() {
  re2::RE2::Options options;
  options.set_encoding(re2::RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  return options;
}

}  // namespace

std::string check_permission_pattern(const std::string& pattern) {
  if (pattern.size() > max_permission_pattern_bytes)
    return "permission pattern is " + std::to_string(pattern.size()) +
           " bytes long; the limit is " + std::to_string(max_permission_pattern_bytes);
  re2::RE2 re(pattern, pattern_options());
  if (!re.ok())
    return "permission " + quote(pattern) + " is not a valid regular expression (" + re.error() +
           ")";
  return {};
}

access_rights::pattern access_rights::compile(const std::string& text) {
  if (text.empty()) return nullptr;
  auto re = std::make_shared<const re2::RE2>(text, pattern_options());
  return re->ok() ? re : nullptr;
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
  if (p && re2::RE2::PartialMatch(target, *p)) return {};
  static const char* verbs[] = {"configure", "write", "read"};
  return std::string(verbs[static_cast<int>(kind)]) + " access to " + resource + " " +
         quote(target) + " in vhost " + quote(vhost_) + " refused for user " + quote(user_);
}

}  // namespace warren
