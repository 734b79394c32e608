#include "persistence/raft_frame.hpp"

namespace warren::persistence {

// FNV-1a over the name: names are unique in a cluster, and 64 bits make a collision between a
// handful of names negligible. Every member computes the same id for the same name.
uint64_t raft_id_of(const std::string& node_name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : node_name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

}  // namespace warren::persistence
