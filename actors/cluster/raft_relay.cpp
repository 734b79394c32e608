#include "actors/cluster/raft_relay.hpp"

#include "actors/common/cluster_protocol.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include <random>

namespace warren {

namespace {

uint64_t random_token() {
  std::random_device device;
  uint64_t token = 0;
  while (token == 0) token = (uint64_t{device()} << 32) ^ device();
  return token;
}

}  // namespace

raft_relay::raft_relay() : token_(random_token()) {}

void raft_relay::attach(persistence::metadata_log* log) {
  std::lock_guard<std::mutex> guard(mutex_);
  log_ = log;
}

bool raft_relay::holds_log() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (log_ == nullptr) return false;
  auto view = log_->latest();
  return !view.voters.empty() || !view.others.empty();
}

void raft_relay::receive(persistence::raft_frame frame) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (log_ != nullptr) log_->receive(std::move(frame));
}

void raft_relay::member_up(const std::string& name) {
  std::lock_guard<std::mutex> guard(mutex_);
  up_.insert(name);
}

void raft_relay::member_down(const std::string& name) {
  std::lock_guard<std::mutex> guard(mutex_);
  up_.erase(name);
  if (log_ != nullptr) log_->member_lost(name);
}

void raft_relay::set_cluster(const caf::actor& cluster) {
  std::lock_guard<std::mutex> guard(mutex_);
  cluster_ = caf::actor_cast<caf::weak_actor_ptr>(cluster);
}

bool raft_relay::send(const std::string& to, persistence::raft_frame frame) {
  caf::actor cluster;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (up_.count(to) == 0) return false;
    cluster = caf::actor_cast<caf::actor>(cluster_.lock());
  }
  if (!cluster) return false;
  caf::anon_send(cluster, raft_atom::value, token_, to, std::move(frame));
  return true;
}

void raft_relay::submit(persistence::metadata_entry entry,
                        persistence::metadata_log::indexed_answer done) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (log_ != nullptr) return log_->submit(std::move(entry), std::move(done));
  }
  done(no_log, 0);
}

void raft_relay::after_applied(uint64_t index, persistence::metadata_log::answer then) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (log_ != nullptr) return log_->after_applied(index, std::move(then));
  }
  then(no_log);
}

std::optional<persistence::metadata_log::view> raft_relay::latest() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (log_ == nullptr) return std::nullopt;
  return log_->latest();
}

bool raft_relay::change_voters(bool add, persistence::metadata_log::member who,
                               std::function<void(const std::string&)> log_note) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (log_ == nullptr || changing_.exchange(true)) return false;
  auto done = [this, note = std::move(log_note)](const std::string& error) {
    changing_ = false;
    note(error);
  };
  if (add)
    log_->add_member(std::move(who), std::move(done));
  else
    log_->remove_member(who.id, std::move(done));
  return true;
}

}  // namespace warren
