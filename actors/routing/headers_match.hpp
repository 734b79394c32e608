// Headers exchange matching: a binding's arguments against a message's headers.
//
// `x-match` = `all` (the default) needs every binding argument present with an equal value;
// `any` needs one. `all-with-x` / `any-with-x` also compare arguments whose key starts with "x-",
// which the plain forms ignore. A binding argument whose value is none matches on presence alone.
#pragma once

#include "core/message.hpp"

#include <string>

namespace warren {

/// Empty when the binding arguments are usable by a headers exchange, else what is wrong.
std::string check_headers_binding(const field_table& binding_args);

bool headers_match(const field_table& binding_args, const field_table& headers);

}  // namespace warren
