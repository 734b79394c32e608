#include "actors/common/protocol.hpp"

namespace warren {}  // namespace warren
