// The vhost's queues: declaring (here, through the metadata log: vhost_log_queues.cpp, or
// through a claim or another node: vhost_cluster.cpp),
// deleting, purging and finding them, the stream requests sent on to streams, and the listings
// and lookups asked of every queue. Each queue is its own actor (actors/queue, actors/stream);
// this file keeps the registry of them.
#include "actors/vhost/vhost_parts.hpp"

#include "actors/common/broker_error.hpp"
#include "actors/common/exchange_protocol.hpp"
#include "actors/common/gather.hpp"
#include "actors/queue/queue_actor.hpp"
#include "actors/stream/stream_actor.hpp"
#include "actors/vhost/equivalence.hpp"
#include "core/names.hpp"

#include <algorithm>

namespace warren::vhost_parts {

using namespace vhost_records;

namespace {

std::vector<caf::actor> queue_actors(const vhost_state& st) {
  std::vector<caf::actor> out;
  for (const auto& [name, q] : st.queues) out.push_back(q.actor);
  return out;
}

// Asks every queue for its statistics; `done` gets them in queue name order.
template <class Done>
void gather_stats(self_ptr self, Done done) {
  gather<queue_info>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, stats_atom::value);
      },
      [=](std::vector<queue_info> rows) mutable {
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.spec.name < b.spec.name; });
        done(std::move(rows));
      });
}

// Names held for a queue about to be created (not for one about to go, which is counted).
size_t new_names_held(const vhost_state& st) {
  size_t n = 0;
  for (const auto& [name, c] : st.claims) n += st.queues.count(name) == 0 ? 1 : 0;
  return n;
}

}  // namespace

caf::error check_owner(const vhost_state& st, const vhost_state::queue_entry& q,
                       const caf::actor& requester) {
  if (q.owner && q.owner != requester)
    return make_broker_error(reply_code::resource_locked,
                             "cannot obtain exclusive access to locked queue " +
                                 quote(q.spec.name) + in_vhost(st) +
                                 "; it belongs to another connection");
  return {};
}

void start_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits, uint64_t id,
                 std::map<std::string, int64_t> committed) {
  auto& st = self->state;
  vhost_state::queue_entry entry;
  entry.spec = spec;
  entry.id = id;
  entry.stream = limits.stream;
  auto me = caf::actor_cast<caf::actor>(self);
  if (entry.stream)
    entry.actor = caf::actor_cast<caf::actor>(self->spawn(stream_actor, st.vhost, spec, limits, me,
                                                          id, st.storage, std::move(committed)));
  else
    entry.actor = caf::actor_cast<caf::actor>(
        self->spawn(queue_actor, st.vhost, spec, limits, me, id, st.storage));
  self->monitor(entry.actor);
  binding_spec implicit{"", spec.name, spec.name, {}, false};
  st.bindings.insert(binding_key(implicit), implicit);
  // anon_send: the exchange answers bind requests, and this one needs no answer.
  caf::anon_send(exchange_handle(st.exchanges[""].actor), bind_atom::value, id, entry.actor,
                 spec.name, field_table{});
  announce(self, entry);
  st.queues[spec.name] = std::move(entry);
}

// A queue is started once its record is committed. Until then its name is held like a cluster
// claim: requests naming it wait (park), routing finds nothing, and a failed commit leaves
// nothing to take back. A queue started at once and taken back after a failed commit could
// already have confirmed publishes, or answered a second declare.
void create_queue(self_ptr self, const queue_spec& spec, const queue_limits& limits,
                  const caf::actor& requester, caf::typed_response_promise<queue_info> rp) {
  auto& st = self->state;
  auto id = ++*st.storage.next_queue_id;
  changes batch;
  if (stored(spec)) put_queue(st.vhost, spec, id, batch);
  auto& held = st.claims[spec.name];
  held.spec = spec;
  held.committing = true;
  persist(self, std::move(batch), [=](const caf::error& err) mutable {
    auto& st = self->state;
    auto parked = std::move(st.claims[spec.name].parked);
    st.claims.erase(spec.name);
    if (err) {
      changes unstored;  // the put stays queued for a retry (persistence_actor.hpp): cancel it
      if (stored(spec)) erase_queue(st.vhost, spec.name, unstored);
      persist_quietly(self, std::move(unstored));
      rp.deliver(err);
    } else {
      start_queue(self, spec, limits, id);
      if (spec.exclusive) {
        st.queues[spec.name].owner = requester;
        self->monitor(requester);
      }
      queue_info fresh;
      fresh.vhost = st.vhost;
      fresh.spec = spec;
      rp.deliver(fresh);
    }
    unpark(std::move(parked));
  });
}

void forget_queue(self_ptr self, const std::string& name, changes& out) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end()) return;
  auto id = q->second.id;
  for (const auto& b : st.bindings.leading_to(name, false)) {
    if (auto e = st.exchanges.find(b.exchange); e != st.exchanges.end())
      self->send(exchange_handle(e->second.actor), unbind_q_atom::value, id);
    drop_binding(self, b, out);
  }
  if (stored(q->second.spec)) erase_queue(st.vhost, name, out);
  unannounce(self, q->second);
  st.queues.erase(q);
}

void delete_queue_now(self_ptr self, const std::string& name) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end()) return;
  caf::anon_send(queue_handle(q->second.actor), delete_atom::value, false, false,
                 true);  // no answer wanted
  changes out;
  forget_queue(self, name, out);
  persist_quietly(self, std::move(out));
}

caf::result<queue_info> declare_queue(self_ptr self, queue_spec& spec, bool passive,
                                      const caf::actor& requester) {
  auto& st = self->state;
  if (st.claims.count(spec.name) != 0)
    return park<queue_info>(self, spec.name, declare_atom::value, spec, passive, requester);
  if (st.queues.count(spec.name) == 0) {
    if (const auto* r = st.remote.find(spec.name)) {  // its home node decides
      if (!r->home) return node_down(st, *r);
      return ask_member<queue_info>(self, r->home, declare_atom::value, spec, passive, requester);
    }
    if (const auto* theirs = log_queue_elsewhere(st, spec.name))  // its placement not here yet
      return declare_log_queue_at_home(self, *theirs, spec, passive);
    if (!passive && !spec.home.empty() && spec.home != st.node_name)
      return declare_elsewhere(self, std::move(spec));
  }
  if (passive) {
    auto q = st.queues.find(spec.name);
    if (q == st.queues.end()) return no_queue(st, spec.name);
    if (auto err = check_owner(st, q->second, requester)) return err;
    auto rp = self->make_response_promise<queue_info>();
    self->request(queue_handle(q->second.actor), caf::infinite, stats_atom::value)
        .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }
  if (st.deleting) return being_deleted(st, "queue " + quote(spec.name));
  if (spec.name.empty()) {
    do {
      spec.name = generated_name("amq.gen-");
    } while (st.queues.count(spec.name) != 0);
  } else {
    if (auto problem = check_name("queue name", spec.name); !problem.empty())
      return invalid(problem);
    if (is_reserved_name(spec.name) && st.queues.count(spec.name) == 0)
      return make_broker_error(reply_code::access_refused, "queue name " + quote(spec.name) +
                                                               " uses the reserved prefix 'amq.'");
  }
  queue_limits limits;
  if (auto problem = parse_queue_arguments(spec.arguments, limits); !problem.empty())
    return invalid(problem + " (queue " + quote(spec.name) + in_vhost(st) + ")");
  if (limits.dead_letter_routing_key && !limits.dead_letter_exchange)
    return invalid("x-dead-letter-routing-key needs x-dead-letter-exchange (queue " +
                   quote(spec.name) + in_vhost(st) + ")");
  if (auto problem =
          check_queue_kind(limits, spec.arguments, spec.durable, spec.exclusive, spec.auto_delete);
      !problem.empty())
    return invalid(problem + " (queue " + quote(spec.name) + in_vhost(st) + ")");
  auto existing = st.queues.find(spec.name);
  if (existing != st.queues.end()) {
    auto& q = existing->second;
    if (auto err = check_owner(st, q, requester)) return err;
    if (auto m = queue_mismatch(st.vhost, q.spec, spec); !m.empty()) return invalid(m);
    auto rp = self->make_response_promise<queue_info>();
    self->request(queue_handle(q.actor), caf::infinite, declare_atom::value)
        .then([=](queue_info& info) mutable { rp.deliver(std::move(info)); },
              [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
    return rp;
  }
  if (st.limits.max_queues >= 0 &&
      st.queues.size() + new_names_held(st) >= static_cast<size_t>(st.limits.max_queues))
    return invalid("cannot declare queue " + quote(spec.name) + ": queue limit in vhost " +
                   quote(st.vhost) + " (" + std::to_string(st.limits.max_queues) + ") is reached");
  auto rp = self->make_response_promise<queue_info>();
  if (queue_in_log(st, spec))
    declare_queue_through_log(self, spec, limits, requester, rp);
  else if (st.cluster && !spec.exclusive)
    claim_then_create(self, spec, limits, requester, rp);
  else
    create_queue(self, spec, limits, requester, rp);
  return rp;
}

caf::result<uint32_t> delete_queue(self_ptr self, const std::string& name, bool if_unused,
                                   bool if_empty, bool force, const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<uint32_t>(self, name, delete_atom::value, queues_atom::value, name, if_unused,
                          if_empty, force, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) {
      if (const auto* theirs = log_queue_elsewhere(st, name))
        return log_queue_not_reached(st, *theirs);
      return uint32_t{0};  // idempotent, as in RabbitMQ
    }
    if (!r->home) return node_down(st, *r);
    return ask_member<uint32_t>(self, r->home, delete_atom::value, queues_atom::value, name,
                                if_unused, if_empty, force, requester);
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  if (home_of_log_queue(st, name) && vhost_records::stored(q->second.spec))
    return delete_queue_through_log(self, name, if_unused, if_empty);
  auto rp = self->make_response_promise<uint32_t>();
  auto actor = q->second.actor;
  self->request(queue_handle(actor), caf::infinite, delete_atom::value, if_unused, if_empty, force)
      .then(
          [=](uint32_t dropped) mutable {
            auto i = self->state.queues.find(name);
            changes batch;
            if (i != self->state.queues.end() && i->second.actor == actor)
              forget_queue(self, name, batch);
            reply_after(self, std::move(batch), rp, dropped);
          },
          [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<uint32_t> purge(self_ptr self, const std::string& name, const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<uint32_t>(self, name, purge_atom::value, name, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) return no_queue(st, name);
    if (!r->home) return node_down(st, *r);
    return ask_member<uint32_t>(self, r->home, purge_atom::value, name, requester);
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  auto rp = self->make_response_promise<uint32_t>();
  self->request(queue_handle(q->second.actor), caf::infinite, purge_atom::value)
      .then([=](uint32_t n) mutable { rp.deliver(n); },
            [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

// Commits, group listings and reads by offset go to the stream, wherever it lives.
caf::result<stream_reply> stream_request(self_ptr self, const stream_command& cmd,
                                         const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, cmd.queue))
    return park<stream_reply>(self, cmd.queue, stream_atom::value, cmd, requester);
  auto q = st.queues.find(cmd.queue);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(cmd.queue);
    if (r == nullptr) return no_queue(st, cmd.queue);
    if (!r->home) return node_down(st, *r);
    return ask_member<stream_reply>(self, r->home, stream_atom::value, cmd, requester);
  }
  if (!q->second.stream)
    return invalid("queue " + quote(cmd.queue) + in_vhost(st) +
                   " is not a stream (declare it with x-queue-type=stream)");
  return self->delegate(caf::actor_cast<stream_actor_type>(q->second.actor), stream_atom::value,
                        cmd);
}

caf::result<caf::actor> find_queue(self_ptr self, const std::string& name,
                                   const caf::actor& requester) {
  auto& st = self->state;
  if (claim_pending(st, name))
    return park<caf::actor>(self, name, find_atom::value, queues_atom::value, name, requester);
  auto q = st.queues.find(name);
  if (q == st.queues.end()) {
    const auto* r = st.remote.find(name);
    if (r == nullptr) return no_queue(st, name);
    if (!r->queue) return node_down(st, *r);
    return r->queue;
  }
  if (auto err = check_owner(st, q->second, requester)) return err;
  return q->second.actor;
}

void queue_unused(self_ptr self, const std::string& name, const caf::actor& queue) {
  auto& st = self->state;
  auto q = st.queues.find(name);
  if (q == st.queues.end() || q->second.actor != queue) return;
  if (home_of_log_queue(st, name) && vhost_records::stored(q->second.spec))
    return queue_unused_through_log(self, name);
  delete_queue_now(self, name);
}

// This node's queues, then those of other members: asked where they live, or a row saying their
// node is down.
caf::typed_response_promise<std::vector<queue_info>> list_queues(self_ptr self) {
  auto rp = self->make_response_promise<std::vector<queue_info>>();
  gather_stats(self, [=](std::vector<queue_info> rows) mutable {
    auto& st = self->state;
    for (auto& row : rows) row.node = st.node_name;
    std::vector<caf::actor> remote;
    for (const auto& [name, e] : st.remote.all()) {
      if (e.queue) {
        remote.push_back(e.queue);
        continue;
      }
      queue_info down;
      down.vhost = st.vhost;
      down.spec = e.spec;
      down.node = e.node;
      down.unavailable = "its node " + e.node + " is down";
      rows.push_back(std::move(down));
    }
    // The log's queues whose node this one has not met since it started.
    for (const auto& [name, spec] : st.log_queues) {
      if (spec.home == st.node_name || st.remote.find(name) != nullptr) continue;
      queue_info unmet;
      unmet.vhost = st.vhost;
      unmet.spec = spec;
      unmet.spec.home.clear();
      unmet.node = spec.home;
      unmet.unavailable = "its node " + spec.home + " is not reachable";
      rows.push_back(std::move(unmet));
    }
    gather<queue_info>(
        remote,
        [=](const caf::actor& q) {
          return self->request(queue_handle(q), remote_timeout, stats_atom::value);
        },
        [=](std::vector<queue_info> theirs) mutable {
          for (auto& row : theirs) {
            const auto* e = self->state.remote.find(row.spec.name);
            row.node = e != nullptr ? e->node : std::string();
            rows.push_back(std::move(row));
          }
          std::sort(rows.begin(), rows.end(),
                    [](const auto& a, const auto& b) { return a.spec.name < b.spec.name; });
          rp.deliver(std::move(rows));
        });
  });
  return rp;
}

caf::typed_response_promise<std::vector<consumer_info>> list_consumers(self_ptr self) {
  auto rp = self->make_response_promise<std::vector<consumer_info>>();
  gather<std::vector<consumer_info>>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, consumers_atom::value);
      },
      [=](std::vector<std::vector<consumer_info>> parts) mutable {
        std::vector<consumer_info> rows;
        for (auto& p : parts) rows.insert(rows.end(), p.begin(), p.end());
        rp.deliver(std::move(rows));
      });
  return rp;
}

caf::typed_response_promise<lookup_reply> lookup(self_ptr self, const message_id& id) {
  auto rp = self->make_response_promise<lookup_reply>();
  gather<lookup_reply>(
      queue_actors(self->state),
      [=](const caf::actor& q) {
        return self->request(queue_handle(q), caf::infinite, lookup_atom::value, id);
      },
      [=](std::vector<lookup_reply> replies) mutable {
        lookup_reply answer;
        for (auto& r : replies)
          if (r.found) answer = std::move(r);
        rp.deliver(std::move(answer));
      });
  return rp;
}

caf::typed_response_promise<void> when_ready(self_ptr self) {
  auto rp = self->make_response_promise<void>();
  gather_stats(self, [=](std::vector<queue_info>) mutable { deliver_unit(rp); });
  return rp;
}

}  // namespace warren::vhost_parts
