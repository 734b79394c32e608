// Field tables and message properties between Cap'n Proto and the message model. Used by both
// the broker's front door and the client library, so it depends on neither CAF nor the actors.
#pragma once

#include "broker.capnp.h"
#include "core/message.hpp"

#include <string>

namespace warren::wire {

field_table read_table(capnp::List<rpc::Field>::Reader list);
void write_table(const field_table& table, capnp::List<rpc::Field>::Builder list);

message_properties read_properties(rpc::Properties::Reader in);
void write_properties(const message_properties& props, rpc::Properties::Builder out);

inline std::string text(capnp::Text::Reader t) {
  return std::string(t.cStr(), t.size());
}

inline std::string bytes(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

inline kj::ArrayPtr<const kj::byte> bytes_of(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

}  // namespace warren::wire
