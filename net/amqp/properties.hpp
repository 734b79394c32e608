// Between AMQP's own types and the broker's message model: field tables and basic properties.
//
// AMQP values map onto the broker's field values by meaning: every integer width and timestamps
// become integers (sent back as signed 64-bit 'l'), decimals floats ('d'), long strings text;
// tables and arrays nest as they are.
#pragma once

#include "core/message.hpp"
#include "net/amqp/frame.hpp"

namespace warren::amqp {

warren::field_table to_fields(const table& t);
table to_table(const warren::field_table& fields);

/// Properties of a published message; throws protocol_error (SYNTAX_ERROR) for a delivery mode
/// other than 1 or 2.
message_properties to_message_properties(const basic_properties& p);
basic_properties to_basic_properties(const message_properties& p);

}  // namespace warren::amqp
