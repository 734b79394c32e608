#include "actors/common/message_types.hpp"

namespace warren {

void register_message_types(caf::actor_system_config& cfg) {
  for_each_message_type([&cfg](auto tag, const char* name) {
    cfg.add_message_type<typename decltype(tag)::type>(name);
  });
}

}  // namespace warren
