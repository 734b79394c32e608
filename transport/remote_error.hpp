// The text of an exception that came over a Cap'n Proto connection, as the other side wrote it.
// Cap'n Proto's C++ runtime puts "remote exception: " ahead of the description of every exception
// that crossed the network (once per hop), which neither a log line nor an error parsed for its
// reply code ("NOT_FOUND: ...") wants. The node's door and the C++ client both read them.
#pragma once

#include <kj/exception.h>

#include <string>

namespace warren::transport {

/// `e`'s description without the runtime's "remote exception: " prefixes.
std::string remote_description(const kj::Exception& e);

}  // namespace warren::transport
