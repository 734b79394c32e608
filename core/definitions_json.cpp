#include "core/definitions_json.hpp"

#include <optional>
#include <stdexcept>

namespace warren {

using json = nlohmann::json;

json to_json(const field_value& v) {
  switch (v.kind) {
    case field_value::none:
      return nullptr;
    case field_value::boolean:
      return v.b;
    case field_value::integer:
      return v.i;
    case field_value::floating:
      return v.d;
    case field_value::text:
      return v.s;
    case field_value::bytes:
      return json::binary(std::vector<uint8_t>(v.s.begin(), v.s.end()));
    case field_value::table:
      return to_json(v.items);
    case field_value::array: {
      json out = json::array();
      for (const auto& item : v.items) out.push_back(to_json(item.value));
      return out;
    }
  }
  return nullptr;
}

json to_json(const field_table& t) {
  json out = json::object();
  for (const auto& f : t) out[f.key] = to_json(f.value);
  return out;
}

namespace {

const char* const sha256_hashing = "rabbit_password_hashing_sha256";

json vhost_limits_parameter(const warren::vhost_definition& v) {
  json value = json::object();
  if (v.limits.max_connections >= 0) value["max-connections"] = v.limits.max_connections;
  if (v.limits.max_queues >= 0) value["max-queues"] = v.limits.max_queues;
  return {{"vhost", v.name}, {"component", "vhost-limits"}, {"name", "limits"}, {"value", value}};
}

}  // namespace

json definitions_to_json(const definitions& defs) {
  json out = {{"product_name", "Warren"},
              {"users", json::array()},
              {"vhosts", json::array()},
              {"permissions", json::array()},
              {"topic_permissions", json::array()},
              {"parameters", json::array()},
              {"global_parameters", json::array()},
              {"policies", json::array()},
              {"queues", json::array()},
              {"exchanges", json::array()},
              {"bindings", json::array()}};
  for (const auto& u : defs.users)
    out["users"].push_back({{"name", u.name},
                            {"password_hash", u.password_hash},
                            {"hashing_algorithm", sha256_hashing},
                            {"tags", u.tags},
                            {"limits", json::object()}});
  for (const auto& v : defs.vhosts) {
    out["vhosts"].push_back({{"name", v.name}});
    if (v.limits.max_connections >= 0 || v.limits.max_queues >= 0)
      out["parameters"].push_back(vhost_limits_parameter(v));
  }
  for (const auto& p : defs.permissions)
    out["permissions"].push_back({{"user", p.user},
                                  {"vhost", p.vhost},
                                  {"configure", p.configure},
                                  {"write", p.write},
                                  {"read", p.read}});
  for (const auto& [vhost, q] : defs.queues)
    out["queues"].push_back({{"name", q.name},
                             {"vhost", vhost},
                             {"durable", q.durable},
                             {"auto_delete", q.auto_delete},
                             {"arguments", to_json(q.arguments)}});
  for (const auto& [vhost, e] : defs.exchanges)
    out["exchanges"].push_back({{"name", e.name},
                                {"vhost", vhost},
                                {"type", to_string(e.type)},
                                {"durable", e.durable},
                                {"auto_delete", e.auto_delete},
                                {"internal", e.internal},
                                {"arguments", to_json(e.arguments)}});
  for (const auto& [vhost, b] : defs.bindings)
    out["bindings"].push_back({{"source", b.exchange},
                               {"vhost", vhost},
                               {"destination", b.destination},
                               {"destination_type", b.to_exchange ? "exchange" : "queue"},
                               {"routing_key", b.key},
                               {"arguments", to_json(b.arguments)}});
  return out;
}

namespace {

// One entry of a section, with where it is for error messages ("queues[3]").
struct entry {
  const json& j;
  std::string where;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(where + ": " + what);
  }
  const json* find(const char* key) const {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::string text(const char* key, std::optional<std::string> fallback = std::nullopt) const {
    const json* v = find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      fail(std::string("\"") + key + "\" is missing");
    }
    if (!v->is_string()) fail(std::string("\"") + key + "\" is not a string");
    return v->get<std::string>();
  }
  bool flag(const char* key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(std::string("\"") + key + "\" is not true or false");
    return v->get<bool>();
  }
  field_table table(const char* key) const;
};

field_value value_from_json(const json& v, const entry& at);

field_table table_from_json(const json& obj, const entry& at) {
  if (!obj.is_object()) at.fail("arguments are not an object");
  field_table out;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    out.push_back(field{it.key(), value_from_json(it.value(), at)});
  return out;
}

field_value value_from_json(const json& v, const entry& at) {
  if (v.is_boolean()) return field_value::of_bool(v.get<bool>());
  if (v.is_number_integer()) return field_value::of_int(v.get<int64_t>());
  if (v.is_number_unsigned()) return field_value::of_int(static_cast<int64_t>(v.get<uint64_t>()));
  if (v.is_number_float()) return field_value::of_double(v.get<double>());
  if (v.is_string()) return field_value::of_text(v.get<std::string>());
  if (v.is_object()) return field_value::of_table(table_from_json(v, at));
  if (v.is_array()) {
    std::vector<field_value> items;
    for (const auto& item : v) items.push_back(value_from_json(item, at));
    return field_value::of_array(std::move(items));
  }
  return field_value{};
}

field_table entry::table(const char* key) const {
  const json* v = find(key);
  return v == nullptr ? field_table{} : table_from_json(*v, *this);
}

// Calls `read` for each entry of `section` (absent = none).
template <class Read>
void each(const json& j, const char* section, Read read) {
  auto it = j.find(section);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array()) throw std::invalid_argument(std::string(section) + " is not a list");
  for (size_t i = 0; i < it->size(); ++i) {
    entry e{(*it)[i], std::string(section) + "[" + std::to_string(i) + "]"};
    if (!e.j.is_object()) e.fail("not an object");
    read(e);
  }
}

std::vector<std::string> read_tags(const entry& e) {
  std::vector<std::string> tags;
  const json* t = e.find("tags");
  if (t == nullptr) return tags;
  if (t->is_array()) {
    for (const auto& tag : *t) {
      if (!tag.is_string()) e.fail("a tag is not a string");
      tags.push_back(tag.get<std::string>());
    }
  } else if (t->is_string()) {  // older RabbitMQ: "administrator,monitoring"
    std::stringstream list(t->get<std::string>());
    for (std::string tag; std::getline(list, tag, ',');)
      if (!tag.empty()) tags.push_back(tag);
  } else {
    e.fail("\"tags\" is neither a list nor a string");
  }
  return tags;
}

warren::user_record read_user(const entry& e) {
  auto name = e.text("name");
  auto algorithm = e.text("hashing_algorithm", std::string(sha256_hashing));
  if (algorithm != sha256_hashing)
    e.fail("user '" + name + "': password hashing '" + algorithm +
           "' is not supported (Warren keeps RabbitMQ's default, " + sha256_hashing + ")");
  return {name, e.text("password_hash"), read_tags(e)};
}

int64_t limit(const entry& e, const json& value, const char* key) {
  auto it = value.find(key);
  if (it == value.end()) return -1;
  if (!it->is_number_integer()) e.fail(std::string("\"") + key + "\" is not an integer");
  return it->get<int64_t>();
}

// A "vhost-limits" parameter, folded into its vhost's definition.
void read_limits(const entry& e, definitions& out) {
  auto vhost = e.text("vhost");
  const json* value = e.find("value");
  if (value == nullptr || !value->is_object()) e.fail("\"value\" is not an object");
  warren::vhost_limits limits{limit(e, *value, "max-connections"), limit(e, *value, "max-queues")};
  for (auto& v : out.vhosts)
    if (v.name == vhost) {
      v.limits = limits;
      return;
    }
  out.vhosts.push_back({vhost, limits});
}

}  // namespace

field_value field_from_json(const json& v, const std::string& where) {
  return value_from_json(v, entry{v, where});
}

field_table table_from_json(const json& obj, const std::string& where) {
  return table_from_json(obj, entry{obj, where});
}

definitions definitions_from_json(const json& j, size_t& skipped) {
  if (!j.is_object()) throw std::invalid_argument("the definitions are not a JSON object");
  definitions out;
  skipped = 0;
  each(j, "users", [&](const entry& e) { out.users.push_back(read_user(e)); });
  each(j, "vhosts", [&](const entry& e) { out.vhosts.push_back({e.text("name"), {}}); });
  each(j, "permissions", [&](const entry& e) {
    out.permissions.push_back(
        {e.text("user"), e.text("vhost"), e.text("configure"), e.text("write"), e.text("read")});
  });
  each(j, "parameters", [&](const entry& e) {
    if (e.text("component") == "vhost-limits")
      read_limits(e, out);
    else
      ++skipped;
  });
  for (const char* unused : {"policies", "topic_permissions", "global_parameters"})
    each(j, unused, [&](const entry&) { ++skipped; });
  each(j, "exchanges", [&](const entry& e) {
    warren::exchange_spec x;
    x.name = e.text("name");
    auto type = e.text("type");
    if (!warren::parse_exchange_type(type, x.type))
      e.fail("exchange '" + x.name + "' has the type '" + type +
             "'; Warren has direct, fanout, topic and headers");
    x.durable = e.flag("durable", true);
    x.auto_delete = e.flag("auto_delete", false);
    x.internal = e.flag("internal", false);
    x.arguments = e.table("arguments");
    out.exchanges.emplace_back(e.text("vhost"), std::move(x));
  });
  each(j, "queues", [&](const entry& e) {
    warren::queue_spec q;
    q.name = e.text("name");
    q.durable = e.flag("durable", true);
    q.auto_delete = e.flag("auto_delete", false);
    q.arguments = e.table("arguments");
    out.queues.emplace_back(e.text("vhost"), std::move(q));
  });
  each(j, "bindings", [&](const entry& e) {
    warren::binding_spec b;
    b.exchange = e.text("source");
    b.destination = e.text("destination");
    auto kind = e.text("destination_type", std::string("queue"));
    if (kind != "queue" && kind != "exchange")
      e.fail("\"destination_type\" is '" + kind + "'; it is queue or exchange");
    b.to_exchange = kind == "exchange";
    b.key = e.text("routing_key", std::string());
    b.arguments = e.table("arguments");
    out.bindings.emplace_back(e.text("vhost"), std::move(b));
  });
  return out;
}

}  // namespace warren
