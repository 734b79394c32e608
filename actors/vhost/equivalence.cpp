#include "actors/vhost/equivalence.hpp"

#include "core/names.hpp"

namespace warren {

namespace {

struct property {
  const char* name;
  std::string received;
  std::string current;
};

const char* yes_no(bool b) {
  return b ? "true" : "false";
}

property flag(const char* name, bool received, bool current) {
  return {name, yes_no(received), yes_no(current)};
}

std::string complaint(const char* what, const std::string& name, const std::string& vhost,
                      const property& p) {
  return std::string("inequivalent arg '") + p.name + "' for " + what + " " + quote(name) +
         " in vhost " + quote(vhost) + ": received '" + p.received + "' but current is '" +
         p.current + "'";
}

std::string first_mismatch(const char* what, const std::string& name, const std::string& vhost,
                           std::initializer_list<property> props) {
  for (const auto& p : props)
    if (p.received != p.current) return complaint(what, name, vhost, p);
  return {};
}

std::string arguments_mismatch(const char* what, const std::string& name, const std::string& vhost,
                               const field_table& received, const field_table& current) {
  if (same_table(received, current)) return {};
  // Tables that differ are refused even when the values print alike (1 as a byte and as a long).
  auto key = first_difference(received, current);
  auto text = [&](const field_table& t) {
    const auto* v = find_field(t, key);
    return v == nullptr ? std::string("none") : to_string(*v);
  };
  return complaint(what, name, vhost, {key.c_str(), text(received), text(current)});
}

}  // namespace

std::string exchange_mismatch(const std::string& vhost, const exchange_spec& current,
                              const exchange_spec& asked) {
  auto m = first_mismatch("exchange", asked.name, vhost,
                          {{"type", to_string(asked.type), to_string(current.type)},
                           flag("durable", asked.durable, current.durable),
                           flag("auto_delete", asked.auto_delete, current.auto_delete),
                           flag("internal", asked.internal, current.internal)});
  if (!m.empty()) return m;
  return arguments_mismatch("exchange", asked.name, vhost, asked.arguments, current.arguments);
}

std::string queue_mismatch(const std::string& vhost, const queue_spec& current,
                           const queue_spec& asked) {
  auto m = first_mismatch("queue", asked.name, vhost,
                          {flag("durable", asked.durable, current.durable),
                           flag("exclusive", asked.exclusive, current.exclusive),
                           flag("auto_delete", asked.auto_delete, current.auto_delete)});
  if (!m.empty()) return m;
  return arguments_mismatch("queue", asked.name, vhost, asked.arguments, current.arguments);
}

}  // namespace warren
