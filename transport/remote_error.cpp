#include "transport/remote_error.hpp"

namespace warren::transport {

std::string remote_description(const kj::Exception& e) {
  std::string description = e.getDescription().cStr();
  const std::string remote = "remote exception: ";
  while (description.rfind(remote, 0) == 0) description.erase(0, remote.size());
  return description;
}

}  // namespace warren::transport
