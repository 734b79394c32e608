#include "apps/node_stats.hpp"

#include "actors/log.hpp"
#include "actors/names.hpp"
#include "actors/protocol.hpp"

#include <caf/scoped_actor.hpp>

namespace warren {

node_stats::node_stats(caf::actor_system& system, caf::actor node, unsigned interval_seconds)
    : system_(system), node_(std::move(node)), interval_(interval_seconds) {
  if (interval_ > 0) thread_ = std::thread([this] { run(); });
}

node_stats::~node_stats() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void node_stats::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stop_; })) {
    lock.unlock();
    caf::scoped_actor self{system_};
    self->request(node_, std::chrono::seconds(interval_), list_atom::value, queues_atom::value)
        .receive(
            [](std::vector<queue_info>& queues) {
              uint64_t ready = 0, unacked = 0;
              for (const auto& q : queues) {
                ready += q.ready;
                unacked += q.unacked;
                if (q.ready == 0 && q.unacked == 0 && q.consumers == 0) continue;
                log(log_level::info, "stats",
                    "queue " + quote(q.spec.name) + " vhost " + quote(q.vhost) + " ready=" +
                        std::to_string(q.ready) + " unacked=" + std::to_string(q.unacked) +
                        " consumers=" + std::to_string(q.consumers));
              }
              log(log_level::info, "stats",
                  std::to_string(queues.size()) + " queues, " + std::to_string(ready) + " ready, " +
                      std::to_string(unacked) + " unacked");
            },
            [](caf::error& err) {
              log(log_level::warn, "stats", "could not collect statistics: " + caf::to_string(err));
            });
    lock.lock();
  }
}

}  // namespace warren
