// One typed behavior made of parts. An actor with a wide interface declares it as sub-interfaces
// (`whole = first::extend_with<rest...>`) and writes one behavior per part, each checked by the
// compiler against its own sub-interface; joining them here checks that the parts together are
// exactly the whole interface, so no handler can be missing or left over.
#pragma once

#include <caf/behavior.hpp>
#include <caf/detail/type_list.hpp>
#include <caf/message_handler.hpp>

#include <type_traits>

namespace warren {

template <class Whole, class First, class... Rest>
typename Whole::behavior_type join_parts(typename First::behavior_type first,
                                         typename Rest::behavior_type... rest) {
  static_assert(std::is_same<Whole, typename First::template extend_with<Rest...>>::value,
                "the parts must make up the whole interface, in its order");
  // A message in two parts would go to the first part's handler alone.
  static_assert(caf::detail::tl_is_distinct<typename Whole::signatures>::value,
                "a message may be in one part only");
  caf::behavior whole = std::move(first.unbox());
  ((whole = caf::message_handler{whole.as_behavior_impl()}.or_else(rest.unbox())), ...);
  return {typename Whole::behavior_type::unsafe_init{}, std::move(whole)};
}

}  // namespace warren
