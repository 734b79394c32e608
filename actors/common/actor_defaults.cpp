#include "actors/common/actor_defaults.hpp"

#include "core/log.hpp"

#include <caf/message_view.hpp>

namespace warren {

void install_actor_defaults(caf::scheduled_actor* self, const char* component) {
  self->set_default_handler([component](caf::scheduled_actor* s, caf::message_view& x) {
    log(log_level::warn, component,
        "dropped an unexpected message: " + caf::to_string(x.content()));
    return caf::drop(s, x);
  });
  self->set_error_handler([component](caf::scheduled_actor*, caf::error& err) {
    log(log_level::debug, component, "ignored an error message: " + caf::to_string(err));
  });
}

}  // namespace warren
