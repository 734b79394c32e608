#include "actors/routing/headers_match.hpp"

namespace warren {

namespace {

enum class match_mode { all, any, all_with_x, any_with_x, invalid };

match_mode mode_of(const field_table& args) {
  const auto* v = find_field(args, "x-match");
  if (v == nullptr) return match_mode::all;
  if (v->kind != field_value::text) return match_mode::invalid;
  if (v->s == "all") return match_mode::all;
  if (v->s == "any") return match_mode::any;
  if (v->s == "all-with-x") return match_mode::all_with_x;
  if (v->s == "any-with-x") return match_mode::any_with_x;
  return match_mode::invalid;
}

}  // namespace

std::string check_headers_binding(const field_table& binding_args) {
  if (mode_of(binding_args) == match_mode::invalid)
    return "x-match must be one of all, any, all-with-x, any-with-x";
  return {};
}

bool headers_match(const field_table& binding_args, const field_table& headers) {
  auto mode = mode_of(binding_args);
  if (mode == match_mode::invalid) return false;
  bool with_x = mode == match_mode::all_with_x || mode == match_mode::any_with_x;
  bool need_all = mode == match_mode::all || mode == match_mode::all_with_x;
  bool any_matched = false;
  for (const auto& arg : binding_args) {
    if (arg.key == "x-match") continue;
    if (!with_x && arg.key.compare(0, 2, "x-") == 0) continue;
    const auto* header = find_field(headers, arg.key);
    bool ok = header != nullptr && (arg.value.kind == field_value::none || *header == arg.value);
    if (ok) {
      any_matched = true;
      if (!need_all) return true;
    } else if (need_all) {
      return false;
    }
  }
  // `all` over no comparable arguments matches everything; `any` over none matches nothing.
  return need_all ? true : any_matched;
}

}  // namespace warren
