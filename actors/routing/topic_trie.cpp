#include "actors/routing/topic_trie.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace warren {

namespace {

std::vector<std::string_view> split_words(std::string_view key) {
  std::vector<std::string_view> words;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    if (dot == std::string_view::npos) {
      words.push_back(key.substr(start));
      return words;
    }
    words.push_back(key.substr(start, dot - start));
    start = dot + 1;
  }
}

}  // namespace

std::string check_topic_binding_key(std::string_view key) {
  for (auto word : split_words(key)) {
    if (word.size() > 1 && word.find_first_of("*#") != std::string_view::npos)
      return "topic binding key '" + std::string(key) + "' has a wildcard inside the word '" +
             std::string(word) + "'; '*' and '#' must be whole words";
  }
  return {};
}

struct topic_trie::node {
  std::map<std::string, std::unique_ptr<node>, std::less<>> words;
  std::unique_ptr<node> star;  // '*'
  std::unique_ptr<node> hash;  // '#'
  std::vector<destination> destinations;

  bool empty() const { return words.empty() && !star && !hash && destinations.empty(); }
};

topic_trie::topic_trie() : root_(std::make_unique<node>()) {}
topic_trie::~topic_trie() = default;
topic_trie::topic_trie(topic_trie&&) noexcept = default;
topic_trie& topic_trie::operator=(topic_trie&&) noexcept = default;

bool topic_trie::insert(std::string_view binding_key, destination dest) {
  node* at = root_.get();
  for (auto word : split_words(binding_key)) {
    std::unique_ptr<node>* slot;
    if (word == "*") {
      slot = &at->star;
    } else if (word == "#") {
      slot = &at->hash;
    } else {
      auto i = at->words.find(word);
      if (i == at->words.end()) i = at->words.emplace(std::string(word), nullptr).first;
      slot = &i->second;
    }
    if (!*slot) *slot = std::make_unique<node>();
    at = slot->get();
  }
  if (std::find(at->destinations.begin(), at->destinations.end(), dest) != at->destinations.end())
    return false;
  at->destinations.push_back(dest);
  return true;
}

bool topic_trie::erase(std::string_view binding_key, destination dest) {
  auto words = split_words(binding_key);
  // Remember the path so emptied nodes can be pruned bottom-up.
  std::vector<std::pair<node*, std::string_view>> path;
  node* at = root_.get();
  for (auto word : words) {
    node* next = nullptr;
    if (word == "*") {
      next = at->star.get();
    } else if (word == "#") {
      next = at->hash.get();
    } else {
      auto i = at->words.find(word);
      if (i != at->words.end()) next = i->second.get();
    }
    if (next == nullptr) return false;
    path.emplace_back(at, word);
    at = next;
  }
  auto i = std::find(at->destinations.begin(), at->destinations.end(), dest);
  if (i == at->destinations.end()) return false;
  at->destinations.erase(i);
  for (auto p = path.rbegin(); p != path.rend(); ++p) {
    auto [parent, word] = *p;
    std::unique_ptr<node>* slot = word == "*"   ? &parent->star
                                  : word == "#" ? &parent->hash
                                                : &parent->words.find(word)->second;
    if (!(*slot)->empty()) break;
    if (word == "*" || word == "#")
      slot->reset();
    else
      parent->words.erase(parent->words.find(word));
  }
  return true;
}

void topic_trie::match(std::string_view routing_key, std::vector<destination>& out) const {
  auto words = split_words(routing_key);
  const size_t n = words.size();
  std::set<std::pair<const node*, size_t>> visited;
  std::set<destination> found;
  // Depth-first over (node, position): position = how many words are consumed.
  std::vector<std::pair<const node*, size_t>> stack{{root_.get(), 0}};
  while (!stack.empty()) {
    auto [at, pos] = stack.back();
    stack.pop_back();
    if (!visited.emplace(at, pos).second) continue;
    if (pos == n) found.insert(at->destinations.begin(), at->destinations.end());
    if (at->hash) {
      // '#' consumes zero or more words: stay on it at this position or any later one.
      for (size_t k = pos; k <= n; ++k) stack.emplace_back(at->hash.get(), k);
    }
    if (pos < n) {
      if (at->star) stack.emplace_back(at->star.get(), pos + 1);
      auto i = at->words.find(words[pos]);
      if (i != at->words.end()) stack.emplace_back(i->second.get(), pos + 1);
    }
  }
  out.insert(out.end(), found.begin(), found.end());
}

bool topic_trie::empty() const {
  return root_->empty();
}

}  // namespace warren
