// Defaults every Warren actor installs: CAF's own would print stray messages to stdout and stop
// an actor on any error message it did not ask for. A broker must stay up instead: stray
// messages are logged and dropped (requests among them get an error reply), stray errors logged.
#pragma once

#include <caf/scheduled_actor.hpp>

namespace warren {

void install_actor_defaults(caf::scheduled_actor* self, const char* component);

}  // namespace warren
