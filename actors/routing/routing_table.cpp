#include "actors/routing/routing_table.hpp"

#include "actors/routing/headers_match.hpp"

#include <algorithm>

namespace warren {

routing_table::routing_table(exchange_type type) : type_(type) {}

bool routing_table::add(queue_id queue, const std::string& key, const field_table& arguments) {
  auto& list = by_queue_[queue];
  for (const auto& b : list)
    if (b.key == key && same_table(b.arguments, arguments)) return false;
  list.push_back({key, arguments});
  ++count_;
  switch (type_) {
    case exchange_type::direct:
      direct_[key].push_back(queue);
      break;
    case exchange_type::fanout:
      break;  // by_queue_ is the fanout set
    case exchange_type::topic:
      topic_.insert(key, queue);
      break;
    case exchange_type::headers:
      headers_.emplace_back(arguments, queue);
      break;
  }
  return true;
}

bool routing_table::remove(queue_id queue, const std::string& key, const field_table& arguments) {
  auto q = by_queue_.find(queue);
  if (q == by_queue_.end()) return false;
  auto& list = q->second;
  auto b = std::find_if(list.begin(), list.end(), [&](const bound& x) {
    return x.key == key && same_table(x.arguments, arguments);
  });
  if (b == list.end()) return false;
  list.erase(b);
  --count_;
  switch (type_) {
    case exchange_type::direct: {
      auto& ids = direct_[key];
      ids.erase(std::find(ids.begin(), ids.end(), queue));
      if (ids.empty()) direct_.erase(key);
      break;
    }
    case exchange_type::fanout:
      break;
    case exchange_type::topic: {
      // The trie holds (key, queue) once even if bound with several argument tables.
      bool still_bound =
          std::any_of(list.begin(), list.end(), [&](const bound& x) { return x.key == key; });
      if (!still_bound) topic_.erase(key, queue);
      break;
    }
    case exchange_type::headers: {
      auto h = std::find_if(headers_.begin(), headers_.end(), [&](const auto& e) {
        return e.second == queue && same_table(e.first, arguments);
      });
      if (h != headers_.end()) headers_.erase(h);
      break;
    }
  }
  if (list.empty()) by_queue_.erase(q);
  return true;
}

void routing_table::remove_queue(queue_id queue) {
  auto q = by_queue_.find(queue);
  if (q == by_queue_.end()) return;
  auto list = q->second;  // copy: remove() edits the original
  for (const auto& b : list) remove(queue, b.key, b.arguments);
}

void routing_table::route(const message& msg, std::vector<queue_id>& out) const {
  size_t first = out.size();
  switch (type_) {
    case exchange_type::direct: {
      auto i = direct_.find(msg.routing_key);
      if (i != direct_.end()) out.insert(out.end(), i->second.begin(), i->second.end());
      break;
    }
    case exchange_type::fanout:
      for (const auto& [queue, list] : by_queue_) out.push_back(queue);
      break;
    case exchange_type::topic:
      topic_.match(msg.routing_key, out);
      break;
    case exchange_type::headers:
      for (const auto& [args, queue] : headers_)
        if (headers_match(args, msg.properties().headers)) out.push_back(queue);
      break;
  }
  std::sort(out.begin() + first, out.end());
  out.erase(std::unique(out.begin() + first, out.end()), out.end());
}

}  // namespace warren
