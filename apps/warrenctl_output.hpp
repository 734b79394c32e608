// warrenctl's output: aligned tables for people, JSON (one document or one object per line)
// for scripts.
#pragma once

#include "apps/text_table.hpp"
#include "warren/types.hpp"

#include "core/definitions_json.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace warrenctl {

using table = warren::text::table;

/// One-line JSON text; invalid UTF-8 in strings is replaced, never fatal.
std::string dump_json(const nlohmann::json& j);

/// Prints columns padded to their widest cell.
void print_table(const table& rows);

using warren::to_json;
std::string table_text(const warren::client::field_table& t);

/// A delivered / fetched / looked-up message as the contract's JSON object.
nlohmann::json to_json(const warren::client::delivery& d);

void print_list(const std::vector<std::string>& vhosts, bool json);
void print_list(const std::vector<warren::client::exchange_row>& rows, bool json);
void print_list(const std::vector<warren::client::queue_row>& rows, bool json);
void print_list(const std::vector<warren::client::binding_row>& rows, bool json);
void print_list(const std::vector<warren::client::consumer_row>& rows, bool json);
void print_list(const std::vector<warren::client::connection_row>& rows, bool json);
void print_list(const std::vector<warren::client::node_row>& rows, bool json);
void print_list(const std::vector<warren::client::group_row>& rows, bool json);
/// Times as ISO 8601 UTC; a grant that never expires has expires_at null ("never" in tables).
void print_list(const std::vector<warren::client::grant_row>& rows, bool json);

}  // namespace warrenctl
