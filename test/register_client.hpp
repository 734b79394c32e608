// One client of the Jepsen-style check of the metadata log (cluster_register_test.cpp): on one
// member, until stopped, it reads and writes the register and adds and deletes the set
// workload's users, vhosts, durable exchanges, bindings and durable queues, recording each
// operation's start and end as it saw them.
#pragma once

#include "cluster_nodes.hpp"
#include "register_checks.hpp"
#include "register_history.hpp"

#include <warren/channel.hpp>
#include <warren/connection.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace warren::test::register_checks {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How a refused write ended: refused before the log took it ("no quorum: ..." is said only
// before an entry reaches raft), or perhaps made (anything else: a lost connection, a leader
// that stepped down with the entry in flight, a timeout).
inline outcome write_refusal(const std::string& error) {
  return error.find("no quorum") != std::string::npos ? outcome::failed : outcome::unknown;
}

// One client, on one member, until `stop`: random reads and writes of the register (values
// unique to it), and adds of users and vhosts (names unique to it) and deletes of ones it added.
class register_client {
 public:
  register_client(warren::client::connect_options to, int index, uint64_t seed)
      : to_(std::move(to)), index_(index) {
    rng_.seed(seed);
  }

  void run(const std::atomic<bool>& stop) {
    for (int i = 1; !stop; ++i) {
      if (!connected()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      auto name = "set-" + std::to_string(index_) + "-" + std::to_string(i);
      switch (std::uniform_int_distribution<int>(0, 14)(rng_)) {
        case 0:
        case 1:
          write(index_ * 1'000'000 + i);
          break;
        case 2:
        case 3:
          read();
          break;
        case 4:
          add(set_op::of::user, name);
          break;
        case 5:
          remove(set_op::of::user);
          break;
        case 6:
          add(set_op::of::vhost, name);
          break;
        case 7:
          remove(set_op::of::vhost);
          break;
        case 8:
          add(set_op::of::exchange, name);
          break;
        case 9:
          remove(set_op::of::exchange);
          break;
        case 10:
          bind(name);
          break;
        case 11:
          unbind();
          break;
        case 12:
          add(set_op::of::queue, name);
          break;
        case 13:
          remove(set_op::of::queue);
          break;
        default:
          declare_shared();
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 30)(rng_)));
    }
  }

  std::vector<register_op> history;
  std::vector<set_op> sets;

 private:
  bool connected() {
    if (conn_) return true;
    try {
      conn_ = warren::client::connection::open(to_);
      return true;
    } catch (const std::exception&) {
      return false;  // the member is down: no operation was made
    }
  }

  void write(int64_t value) {
    register_op op{register_op::kind::write, value, now_ns(), 0, outcome::ok, name()};
    try {
      conn_->set_vhost_limits("reg", {-1, value});
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      conn_.reset();
    }
    op.ended = now_ns();
    history.push_back(op);
  }

  void read() {
    register_op op{register_op::kind::read, 0, now_ns(), 0, outcome::ok, name()};
    try {
      conn_->sync_metadata();
      op.value = conn_->get_vhost_limits("reg").max_queues;
    } catch (const std::exception&) {
      op.result = outcome::unknown;  // says nothing; the checker drops it
      conn_.reset();
    }
    op.ended = now_ns();
    history.push_back(op);
  }

  void add(set_op::of thing, const std::string& name) {
    set_op op{set_op::kind::add, thing, name, outcome::ok, {}};
    try {
      if (thing == set_op::of::user)
        conn_->add_user(name, "set-password");
      else if (thing == set_op::of::vhost)
        conn_->add_vhost(name);
      else if (thing == set_op::of::queue)
        conn_->open_channel()->queue_declare(name, cluster::durable_queue());
      else
        conn_->open_channel()->exchange_declare(name, "fanout", cluster::durable_exchange());
      added_[thing].push_back(name);
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      conn_.reset();
    }
    sets.push_back(op);
  }

  // Binds "hub" to an exchange this client added (answered), with key `name`.
  void bind(const std::string& name) {
    auto& exchanges = added_[set_op::of::exchange];
    if (exchanges.empty()) return;
    auto to = exchanges[std::uniform_int_distribution<size_t>(0, exchanges.size() - 1)(rng_)];
    set_op op{set_op::kind::add, set_op::of::binding, name, outcome::ok, {}};
    try {
      conn_->open_channel()->exchange_bind(to, hub, name);
      added_[set_op::of::binding].push_back(name);
      bound_to_[name] = to;
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      op.detail = e.what();
      conn_.reset();
    }
    op.detail = "to " + to + ", ended " + when() + " " + op.detail;
    sets.push_back(op);
  }

  void unbind() {
    auto& bound = added_[set_op::of::binding];
    if (bound.empty()) return;
    auto at = std::uniform_int_distribution<size_t>(0, bound.size() - 1)(rng_);
    std::swap(bound[at], bound.back());
    set_op op{set_op::kind::remove, set_op::of::binding, bound.back(), outcome::ok, {}};
    bound.pop_back();
    try {
      conn_->open_channel()->exchange_unbind(bound_to_[op.name], hub, op.name);
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      op.detail = e.what();
      conn_.reset();
    }
    op.detail = "ended " + when() + " " + op.detail;
    // Refused, it is still bound: a later delete of its exchange deletes it too, and it may be
    // unbound again (the later of two unbinds decides).
    if (op.result == outcome::failed)
      bound.push_back(op.name);
    else
      bound_to_.erase(op.name);
    sets.push_back(op);
  }

  // A declare of one of a few names every client declares, on every member, none deleting them:
  // whatever the cuts, each must end as one queue (the check lists no name twice). Its outcome
  // is not checked: it may be refused, or answered as a declare of the queue on another member.
  void declare_shared() {
    auto name = "shared-" + std::to_string(std::uniform_int_distribution<int>(0, 2)(rng_));
    try {
      conn_->open_channel()->queue_declare(name, cluster::durable_queue());
    } catch (const std::exception&) {
      conn_.reset();
    }
  }

  // A delete of exchange `name` that ended with `result` is one of every binding to it, too.
  void bindings_deleted_with(const std::string& name, outcome result) {
    auto& bound = added_[set_op::of::binding];
    for (auto b = bound.begin(); b != bound.end();) {
      if (bound_to_[*b] != name) {
        ++b;
        continue;
      }
      sets.push_back({set_op::kind::remove, set_op::of::binding, *b, result,
                      "with exchange " + name + ", ended " + when()});
      bound_to_.erase(*b);
      b = bound.erase(b);
    }
  }

  // Deletes a user or vhost this client added (answered), drawn at random; none yet: nothing.
  void remove(set_op::of thing) {
    auto& added = added_[thing];
    if (added.empty()) return;
    auto at = std::uniform_int_distribution<size_t>(0, added.size() - 1)(rng_);
    std::swap(added[at], added.back());
    set_op op{set_op::kind::remove, thing, added.back(), outcome::ok, {}};
    added.pop_back();
    try {
      if (thing == set_op::of::user)
        conn_->delete_user(op.name);
      else if (thing == set_op::of::vhost)
        conn_->delete_vhost(op.name);
      else if (thing == set_op::of::queue)
        conn_->open_channel()->queue_delete(op.name);
      else
        conn_->open_channel()->exchange_delete(op.name);
    } catch (const std::exception& e) {
      op.result = write_refusal(e.what());
      conn_.reset();
    }
    sets.push_back(op);
    if (thing == set_op::of::exchange) bindings_deleted_with(op.name, op.result);
  }

  std::string name() const { return "client of " + to_.host + ":" + std::to_string(to_.port); }

  // Now, for a failure's message: milliseconds on the clock the partitions' messages use too.
  static std::string when() { return std::to_string(now_ns() / 1'000'000) + " ms"; }

  warren::client::connect_options to_;
  int index_;
  std::mt19937_64 rng_;
  std::unique_ptr<warren::client::connection> conn_;
  std::map<set_op::of, std::vector<std::string>> added_;  // added, not deleted since
  std::map<std::string, std::string> bound_to_;           // binding -> its exchange
};

}  // namespace warren::test::register_checks
