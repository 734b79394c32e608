// JSON forms shared by warrenctl and the management door: field values as JSON, and a node's
// definitions in RabbitMQ's definitions JSON (users with password hashes, vhosts, permissions,
// exchanges, queues, bindings, and vhost limits as "vhost-limits" parameters), so a setup moves
// between RabbitMQ and Warren both ways.
#pragma once

#include "core/declarations.hpp"
#include "core/message.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>

namespace warren {

/// A field value as JSON: bytes become JSON binary, tables objects, arrays arrays.
nlohmann::json to_json(const field_value& v);
nlohmann::json to_json(const field_table& t);

/// A JSON value as a field value (RabbitMQ's arguments and headers); throws
/// std::invalid_argument naming `where` for a value that has no field form.
field_value field_from_json(const nlohmann::json& v, const std::string& where);
field_table table_from_json(const nlohmann::json& obj, const std::string& where);

/// The definitions as RabbitMQ writes them.
nlohmann::json definitions_to_json(const definitions& defs);

/// RabbitMQ's definitions JSON read back; throws std::invalid_argument naming the entry that is
/// wrong (its section and position). Sections Warren has no use for (policies, parameters other
/// than vhost limits, topic permissions) are left out; `skipped` counts their entries.
definitions definitions_from_json(const nlohmann::json& j, size_t& skipped);

}  // namespace warren
