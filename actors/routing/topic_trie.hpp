// Topic routing: a trie over the words of binding keys.
//
// Keys are words separated by '.'; the empty key is one empty word. In a binding key `*` matches
// exactly one word and `#` zero or more. Matching walks the trie once per routing key and visits
// each (trie node, word position) pair at most once, so many `#` wildcards cannot make it
// exponential; its cost depends on the routing key and the wildcards, not on the number of
// bindings sharing a prefix.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace warren {

/// Empty when `key` is a valid topic binding key, otherwise what is wrong with it
/// (wildcards must be whole words: `a.*.b` is fine, `a*.b` is not).
std::string check_topic_binding_key(std::string_view key);

class topic_trie {
 public:
  using destination = uint64_t;

  topic_trie();
  ~topic_trie();
  topic_trie(topic_trie&&) noexcept;
  topic_trie& operator=(topic_trie&&) noexcept;

  /// Adds (key, dest); false when it was already there.
  bool insert(std::string_view binding_key, destination dest);

  /// Removes (key, dest) and prunes emptied branches; false when it was not there.
  bool erase(std::string_view binding_key, destination dest);

  /// Appends every destination whose binding key matches, each once, to `out`.
  void match(std::string_view routing_key, std::vector<destination>& out) const;

  bool empty() const;

 private:
  struct node;
  std::unique_ptr<node> root_;
};

}  // namespace warren
