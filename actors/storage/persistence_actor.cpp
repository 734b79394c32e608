#include "actors/storage/persistence_actor.hpp"

#include "actors/common/actor_defaults.hpp"
#include "actors/common/broker_error.hpp"
#include "core/log.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace warren {

namespace {

using self_ptr = persistence_actor_type::stateful_pointer<persistence_state>;

void schedule_retry(self_ptr self) {
  if (self->state.retry_scheduled) return;
  self->state.retry_scheduled = true;
  self->delayed_send(self, std::chrono::seconds(1), flush_atom::value);
}

// The last change of each (table, key) of `batch`, in their order: what a failing disk keeps
// waiting stays as large as the records it touches, however many times they changed.
std::vector<persistence::meta_mutation> last_per_key(
    std::vector<persistence::meta_mutation> batch) {
  std::set<std::pair<persistence::meta_table, std::string>> seen;
  std::vector<persistence::meta_mutation> out;
  for (auto m = batch.rbegin(); m != batch.rend(); ++m)
    if (seen.emplace(m->table, m->key).second) out.push_back(std::move(*m));
  std::reverse(out.begin(), out.end());
  return out;
}

// Commits what is unwritten and what arrived since, in one transaction; answers the waiting.
void flush(self_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  st.retry_scheduled = false;
  auto waiting = std::move(st.waiting);
  auto retried = st.unwritten.size();
  auto batch = std::move(st.unwritten);
  batch.insert(batch.end(), std::make_move_iterator(st.batch.begin()),
               std::make_move_iterator(st.batch.end()));
  st.waiting.clear();
  st.batch.clear();
  st.unwritten.clear();
  caf::error failure;
  try {
    st.store->apply(batch);
    if (retried != 0)
      log(log_level::info, "persistence",
          std::to_string(retried) + " change(s) kept from a failed commit are stored now");
  } catch (const std::exception& e) {
    if (!waiting.empty())  // a retry alone fails quietly: its failure was logged already
      log(log_level::error, "persistence",
          std::string(e.what()) + " (" + std::to_string(batch.size()) +
              " change(s) kept, to be written again)");
    failure = make_broker_error(reply_code::internal_error,
                                std::string("metadata could not be stored: ") + e.what());
    st.unwritten = last_per_key(std::move(batch));
    schedule_retry(self);
  }
  for (auto& rp : waiting) {
    if (failure)
      rp.deliver(failure);
    else
      rp.deliver(caf::unit);
  }
}

}  // namespace

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
      [=](flush_atom) { flush(self); },
  };
}

}  // namespace warren
