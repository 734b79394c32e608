#include "actors/protocol.hpp"

namespace warren {}  // namespace warren
