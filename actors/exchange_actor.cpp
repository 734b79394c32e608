#include "actors/exchange_actor.hpp"

#include "actors/actor_defaults.hpp"

#include "actors/log.hpp"

namespace warren {

caf::behavior exchange_actor(caf::stateful_actor<exchange_state>* self, exchange_spec spec) {
  install_actor_defaults(self, "exchange");
  self->state.table = routing_table(spec.type);
  self->state.spec = std::move(spec);
  self->attach_functor([=](const caf::error& reason) {
    log(log_level::debug, "exchange", "exchange stopped: " + caf::to_string(reason));
  });
  return {
      [=](bind_atom, uint64_t queue_id, caf::actor queue, const std::string& key,
          const field_table& args) {
        auto& st = self->state;
        st.queues[queue_id] = std::move(queue);
        return st.table.add(queue_id, key, args);
      },
      [=](unbind_atom, uint64_t queue_id, const std::string& key, const field_table& args) {
        auto& st = self->state;
        bool removed = st.table.remove(queue_id, key, args);
        if (!st.table.binds(queue_id)) st.queues.erase(queue_id);
        return removed;
      },
      [=](unbind_q_atom, uint64_t queue_id) {
        self->state.table.remove_queue(queue_id);
        self->state.queues.erase(queue_id);
      },
      [=](publish_atom, publish_batch& batch) {
        auto& st = self->state;
        std::vector<uint32_t> counts(batch.items.size(), 0);
        std::unordered_map<routing_table::queue_id, std::vector<publish_item>> shares;
        std::vector<routing_table::queue_id> targets;
        for (size_t i = 0; i < batch.items.size(); ++i) {
          targets.clear();
          st.table.route(*batch.items[i].msg, targets);
          counts[i] = static_cast<uint32_t>(targets.size());
          for (auto q : targets) shares[q].push_back(batch.items[i]);
        }
        for (auto& [queue_id, items] : shares)
          self->send(st.queues[queue_id], enqueue_atom::value,
                     publish_batch{batch.origin, batch.channel, std::move(items)});
        return counts;
      },
  };
}

}  // namespace warren
