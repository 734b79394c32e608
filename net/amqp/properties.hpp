// Between AMQP's own types and the broker's message model: field tables and basic properties.
//
// The broker's field values are flat (bool, integer, float, text, bytes, none). AMQP values map
// onto them by meaning: every integer width and timestamps become integers, decimals floats,
// long strings text. Nested tables and arrays have no broker form yet; they travel as their
// AMQP encoding in a bytes value, so they are kept but come back as byte arrays.
#pragma once

#include "actors/message.hpp"
#include "net/amqp/frame.hpp"

namespace warren::amqp {

warren::field_table to_fields(const table& t);
table to_table(const warren::field_table& fields);

/// Properties of a published message; throws protocol_error (SYNTAX_ERROR) for a delivery mode
/// other than 1 or 2.
message_properties to_message_properties(const basic_properties& p);
basic_properties to_basic_properties(const message_properties& p);

}  // namespace warren::amqp
