#include "actors/queue/dead_lettering.hpp"

#include "core/clock.hpp"

#include <algorithm>

namespace warren {

namespace {

field_value typed(field_value v, char amqp_type) {
  v.amqp_type = static_cast<uint8_t>(amqp_type);
  return v;
}

const field_value* entry_field(const field_value& entry, const char* key) {
  return entry.kind == field_value::table ? find_field(entry.items, key) : nullptr;
}

bool entry_is(const field_value& entry, const char* key, const std::string& text) {
  const auto* v = entry_field(entry, key);
  return v != nullptr && v->kind == field_value::text && v->s == text;
}

// RabbitMQ's x-death: one entry per (queue, reason), most recent first; a repeated death in the
// same queue for the same reason counts up and moves its entry to the front.
field_value updated_x_death(const message& m, const std::string& queue, const char* reason) {
  std::vector<field_value> deaths;
  if (const auto* old = find_field(m.properties().headers, "x-death");
      old != nullptr && old->kind == field_value::array)
    for (const auto& f : old->items) deaths.push_back(f.value);
  auto same = std::find_if(deaths.begin(), deaths.end(), [&](const field_value& d) {
    return entry_is(d, "queue", queue) && entry_is(d, "reason", reason);
  });
  field_value entry;
  if (same != deaths.end()) {
    entry = *same;
    deaths.erase(same);
    for (auto& f : entry.items)
      if (f.key == "count") f.value = typed(field_value::of_int(f.value.i + 1), 'l');
  } else {
    std::vector<field> info{
        {"count", typed(field_value::of_int(1), 'l')},
        {"reason", field_value::of_text(reason)},
        {"queue", field_value::of_text(queue)},
        {"time", typed(field_value::of_int(wall_seconds()), 'T')},
        {"exchange", field_value::of_text(m.exchange)},
        {"routing-keys", field_value::of_array({field_value::of_text(m.routing_key)})}};
    if (!m.properties().expiration.empty())
      info.push_back({"original-expiration", field_value::of_text(m.properties().expiration)});
    entry = field_value::of_table(std::move(info));
  }
  deaths.insert(deaths.begin(), std::move(entry));
  return field_value::of_array(std::move(deaths));
}

void set_header(field_table& headers, const std::string& key, field_value v) {
  for (auto& f : headers)
    if (f.key == key) {
      f.value = std::move(v);
      return;
    }
  headers.push_back({key, std::move(v)});
}

}  // namespace

// The copy of `m` that goes to the dead-letter exchange, with RabbitMQ's death headers.
message_ptr dead_letter_copy(const std::string& queue, const queue_limits& limits, const message& m,
                             const char* reason) {
  auto copy = std::make_shared<message>(m);
  auto props = m.properties();
  if (find_field(props.headers, "x-first-death-queue") == nullptr) {
    props.headers.push_back({"x-first-death-queue", field_value::of_text(queue)});
    props.headers.push_back({"x-first-death-reason", field_value::of_text(reason)});
    props.headers.push_back({"x-first-death-exchange", field_value::of_text(m.exchange)});
  }
  set_header(props.headers, "x-death", updated_x_death(m, queue, reason));
  props.expiration.clear();  // kept as original-expiration: it must not expire again
  props.set_to_default &= ~property_flag::expiration;
  copy->set_properties(std::move(props));
  copy->exchange = *limits.dead_letter_exchange;
  if (limits.dead_letter_routing_key) copy->routing_key = *limits.dead_letter_routing_key;
  copy->mandatory = false;
  copy->dead_lettered = true;
  return copy;
}

bool dead_letter_cycle(const message& m, const std::string& queue) {
  if (!m.dead_lettered) return false;
  const auto* deaths = find_field(m.properties().headers, "x-death");
  if (deaths == nullptr || deaths->kind != field_value::array) return false;
  for (const auto& f : deaths->items) {
    if (entry_is(f.value, "reason", "rejected")) return false;
    if (entry_is(f.value, "queue", queue)) return true;
  }
  return false;
}

}  // namespace warren
