#include "actors/routing/exchange_actor.hpp"

#include "actors/common/vhost_protocol.hpp"

#include "actors/common/actor_defaults.hpp"

#include "core/log.hpp"

#include <caf/send.hpp>

#include <algorithm>
#include <chrono>

namespace warren {

namespace {

using self_ptr = exchange_actor_type::stateful_pointer<exchange_state>;
using path_t = std::vector<caf::actor_addr>;

bool on_path(const path_t& path, const caf::actor& a) {
  return std::find(path.begin(), path.end(), a.address()) != path.end();
}

// Answers gathered for one resolve(): `done` runs when the last part is in.
struct resolving {
  route_sets sets;
  size_t left = 1;
  std::function<void(route_sets)> done;
  void finish_one() {
    if (--left == 0) done(std::move(sets));
  }
};
using resolving_ptr = std::shared_ptr<resolving>;

// Asks `target` (an exchange) where the messages at `indices` go from there.
void ask_downstream(self_ptr self, const caf::actor& target, const std::vector<message_ptr>& msgs,
                    std::vector<size_t> indices, const path_t& path, resolving_ptr acc) {
  std::vector<message_ptr> subset;
  subset.reserve(indices.size());
  for (auto i : indices) subset.push_back(msgs[i]);
  ++acc->left;
  self->request(exchange_handle(target), caf::infinite, route_atom::value, std::move(subset), path)
      .then(
          [=](route_sets& got) {
            for (size_t k = 0; k < got.size() && k < indices.size(); ++k) {
              auto& into = acc->sets[indices[k]];
              into.insert(into.end(), got[k].begin(), got[k].end());
            }
            acc->finish_one();
          },
          [=](caf::error&) { acc->finish_one(); });  // it went away: nothing reached there
}

// Messages this exchange routed nowhere go to its alternate exchange, found by name.
void via_alternate(self_ptr self, const std::vector<message_ptr>& msgs, std::vector<size_t> indices,
                   const path_t& path, resolving_ptr acc) {
  auto& st = self->state;
  auto forward = [=](const caf::actor& ae) {
    if (ae && !on_path(path, ae)) ask_downstream(self, ae, msgs, indices, path, acc);
  };
  if (st.alternate_actor) return forward(st.alternate_actor);
  ++acc->left;
  self->request(vhost_handle(st.vhost), caf::infinite, find_atom::value, exchanges_atom::value,
                *st.alternate)
      .then(
          [=](caf::actor& ae, bool) {
            self->state.alternate_actor = ae;
            self->monitor(ae);
            forward(ae);
            acc->finish_one();
          },
          [=](caf::error&) { acc->finish_one(); });  // not declared (yet): routed nowhere
}

// Works out, per message, the queues it reaches from this exchange; `done` may run at once.
void resolve(self_ptr self, const std::vector<message_ptr>& msgs, path_t path,
             std::function<void(route_sets)> done) {
  auto& st = self->state;
  path.push_back(self->address());
  auto acc = std::make_shared<resolving>();
  acc->sets.resize(msgs.size());
  acc->done = std::move(done);
  std::map<caf::actor, std::vector<size_t>> forwards;
  std::vector<size_t> unrouted;
  std::vector<routing_table::queue_id> ids;
  for (size_t i = 0; i < msgs.size(); ++i) {
    ids.clear();
    st.table.route(*msgs[i], ids);
    if (ids.empty() && st.alternate) unrouted.push_back(i);
    for (auto id : ids) {
      const auto& target = st.targets[id];
      if (!is_exchange_id(id))
        acc->sets[i].push_back({id, target});
      else if (!on_path(path, target))
        forwards[target].push_back(i);
    }
  }
  for (auto& [target, indices] : forwards)
    ask_downstream(self, target, msgs, std::move(indices), path, acc);
  if (!unrouted.empty()) via_alternate(self, msgs, std::move(unrouted), path, acc);
  acc->finish_one();
}

std::vector<uint64_t> sequence_numbers(const publish_batch& batch) {
  std::vector<uint64_t> seqs;
  for (const auto& item : batch.items)
    if (item.seq != 0) seqs.push_back(item.seq);
  return seqs;
}

// How long a queue on another node may take to take a share before its messages count as refused.
// Its node is normally quicker to be seen down; this bounds what nothing else answers.
constexpr auto remote_share_timeout = std::chrono::seconds(30);

// Sends `queue` its share of a batch, or refuses the share to its publisher when the queue is
// already gone: a proxy CAF killed (its node's connection is lost) or a queue that stopped
// between its deletion and this exchange's unbinding drops what it is sent unanswered. That is
// the window a member's loss opens: it reaches the publishers (which refuse what waits) before
// the vhost re-points this exchange to the down stand-in, and a share sent into it went to a
// dead node, its confirms waiting for ever. A share for another node is also a request: if the
// proxy dies after the share left, its failure or timeout refuses the messages.
void send_share(self_ptr self, const caf::actor& queue, publish_batch share) {
  auto* target = caf::actor_cast<caf::abstract_actor*>(queue);
  bool gone = target == nullptr || target->getf(caf::abstract_actor::is_cleaned_up_flag);
  bool answers = share.origin && std::any_of(share.items.begin(), share.items.end(),
                                             [](const publish_item& i) { return i.seq != 0; });
  if (!gone && (!answers || queue.node() == self->node())) {
    self->send(queue_handle(queue), enqueue_atom::value, std::move(share));
    return;
  }
  auto refuse = [origin = share.origin, channel = share.channel,
                 seqs = sequence_numbers(share)](caf::error&) {
    caf::anon_send(origin, confirm_atom::value, channel, std::vector<uint64_t>{}, seqs);
  };
  caf::error none;
  if (gone) return answers ? refuse(none) : void();
  self->request(queue_handle(queue), remote_share_timeout, enqueue_atom::value, std::move(share))
      .then([] {}, std::move(refuse));
}

// Sends each queue its share of `batch`; returns per message how many queues took it.
std::vector<uint32_t> deliver(self_ptr self, publish_batch& batch, route_sets& sets) {
  std::vector<uint32_t> counts(batch.items.size(), 0);
  std::unordered_map<routing_table::queue_id, std::pair<caf::actor, std::vector<publish_item>>>
      shares;
  for (size_t i = 0; i < batch.items.size() && i < sets.size(); ++i) {
    auto& set = sets[i];
    std::sort(set.begin(), set.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    set.erase(std::unique(set.begin(), set.end(),
                          [](const auto& a, const auto& b) { return a.id == b.id; }),
              set.end());
    counts[i] = static_cast<uint32_t>(set.size());
    for (auto& t : set) {
      auto& share = shares[t.id];
      share.first = t.queue;
      share.second.push_back(batch.items[i]);
    }
  }
  for (auto& [id, share] : shares)
    send_share(self, share.first, {batch.origin, batch.channel, std::move(share.second)});
  return counts;
}

// The common case: no exchange bindings, no alternate exchange, nothing waiting.
std::vector<uint32_t> route_directly(self_ptr self, publish_batch& batch) {
  auto& st = self->state;
  std::vector<uint32_t> counts(batch.items.size(), 0);
  std::unordered_map<routing_table::queue_id, std::vector<publish_item>> shares;
  std::vector<routing_table::queue_id> ids;
  for (size_t i = 0; i < batch.items.size(); ++i) {
    ids.clear();
    st.table.route(*batch.items[i].msg, ids);
    counts[i] = static_cast<uint32_t>(ids.size());
    for (auto q : ids) shares[q].push_back(batch.items[i]);
  }
  for (auto& [queue_id, items] : shares)
    send_share(self, st.targets[queue_id], {batch.origin, batch.channel, std::move(items)});
  return counts;
}

// Batches leave in the order they came, each once its routes are known.
void flush_in_order(self_ptr self) {
  auto& q = self->state.in_order;
  while (!q.empty() && q.front()->done) {
    auto entry = q.front();
    q.pop_front();
    entry->rp.deliver(deliver(self, entry->batch, entry->sets));
  }
}

caf::result<std::vector<uint32_t>> publish(self_ptr self, publish_batch& batch) {
  auto& st = self->state;
  if (st.exchange_targets == 0 && !st.alternate && st.in_order.empty())
    return route_directly(self, batch);
  auto entry = std::make_shared<exchange_state::in_flight>();
  entry->rp = self->make_response_promise<std::vector<uint32_t>>();
  std::vector<message_ptr> msgs;
  msgs.reserve(batch.items.size());
  for (const auto& item : batch.items) msgs.push_back(item.msg);
  entry->batch = std::move(batch);
  st.in_order.push_back(entry);
  resolve(self, msgs, {}, [=](route_sets sets) {
    entry->sets = std::move(sets);
    entry->done = true;
    flush_in_order(self);
  });
  return entry->rp;
}

}  // namespace

std::optional<std::string> alternate_exchange_of(const exchange_spec& spec) {
  const auto* v = find_field(spec.arguments, "alternate-exchange");
  if (v == nullptr || v->kind != field_value::text || v->s.empty()) return std::nullopt;
  return v->s;
}

exchange_actor_type::behavior_type exchange_actor(
    exchange_actor_type::stateful_pointer<exchange_state> self, exchange_spec spec,
    caf::actor vhost) {
  install_actor_defaults(self, "exchange");
  auto& st = self->state;
  st.table = routing_table(spec.type);
  st.alternate = alternate_exchange_of(spec);
  st.spec = std::move(spec);
  st.vhost = std::move(vhost);
  self->attach_functor([=](const caf::error& reason) {
    log(log_level::debug, "exchange", "exchange stopped: " + caf::to_string(reason));
  });
  self->set_down_handler([=](caf::down_msg& dm) {
    if (self->state.alternate_actor.address() == dm.source) self->state.alternate_actor = nullptr;
  });
  auto forget_target = [=](routing_table::queue_id id) {
    auto& st = self->state;
    if (st.targets.erase(id) != 0 && is_exchange_id(id)) --st.exchange_targets;
  };
  return {
      [=](bind_atom, uint64_t id, caf::actor target, const std::string& key,
          const field_table& args) {
        auto& st = self->state;
        if (st.targets.emplace(id, std::move(target)).second && is_exchange_id(id))
          ++st.exchange_targets;
        return st.table.add(id, key, args);
      },
      [=](unbind_atom, uint64_t id, const std::string& key, const field_table& args) {
        auto& st = self->state;
        bool removed = st.table.remove(id, key, args);
        if (!st.table.binds(id)) forget_target(id);
        return removed;
      },
      [=](unbind_q_atom, uint64_t id) {
        self->state.table.remove_queue(id);
        forget_target(id);
      },
      [=](publish_atom, publish_batch& batch) { return publish(self, batch); },
      [=](route_atom, std::vector<message_ptr>& msgs,
          std::vector<caf::actor_addr>& path) -> caf::result<route_sets> {
        auto rp = self->make_response_promise<route_sets>();
        resolve(self, msgs, std::move(path), [=](route_sets sets) mutable { rp.deliver(sets); });
        return rp;
      },
  };
}

}  // namespace warren
