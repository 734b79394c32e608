#include "actors/storage/persistence_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/broker_error.hpp"
#include "core/log.hpp"

namespace warren {

persistence_actor_type::behavior_type persistence_actor(
    persistence_actor_type::stateful_pointer<persistence_state> self,
    std::shared_ptr<persistence::lmdb_store> store) {
  install_actor_defaults(self, "persistence");
  self->state.store = std::move(store);
  return {
      [=](persist_atom, std::vector<persistence::meta_mutation>& mutations) {
        auto& st = self->state;
        st.batch.insert(st.batch.end(), std::make_move_iterator(mutations.begin()),
                        std::make_move_iterator(mutations.end()));
        st.waiting.push_back(self->make_response_promise());
        if (!st.flush_scheduled) {
          st.flush_scheduled = true;
          self->send(self, flush_atom::value);
        }
      },
      [=](flush_atom) {
        auto& st = self->state;
        st.flush_scheduled = false;
        auto waiting = std::move(st.waiting);
        auto batch = std::move(st.batch);
        st.waiting.clear();
        st.batch.clear();
        caf::error failure;
        try {
          st.store->apply(batch);
        } catch (const std::exception& e) {
          log(log_level::error, "persistence", e.what());
          failure = make_broker_error(reply_code::internal_error,
                                      std::string("metadata could not be stored: ") + e.what());
        }
        for (auto& rp : waiting) {
          if (failure)
            rp.deliver(failure);
          else
            rp.deliver(caf::unit);
        }
      },
  };
}

}  // namespace warren
