#include "actors/queue/queue_core.hpp"

#include "core/log.hpp"
#include "core/names.hpp"

#include <algorithm>
#include <map>

namespace warren {

namespace {

// One confirm message per (origin, channel), acks and nacks together.
class confirm_grouping {
 public:
  void add(const caf::actor& origin, uint16_t channel, uint64_t publish_seq, bool ok) {
    auto& c = by_channel_[{origin, channel}];
    (ok ? c.acked : c.nacked).push_back(publish_seq);
  }
  std::vector<group_commit::confirms> take() {
    std::vector<group_commit::confirms> out;
    out.reserve(by_channel_.size());
    for (auto& [key, c] : by_channel_) {
      c.origin = key.first;
      c.channel = key.second;
      out.push_back(std::move(c));
    }
    return out;
  }

 private:
  std::map<std::pair<caf::actor, uint16_t>, group_commit::confirms> by_channel_;
};

}  // namespace

void group_commit::await(const publish_batch& batch, uint64_t publish_seq, uint64_t store_seq) {
  if (publish_seq != 0 && batch.origin)
    waiting_.push_back({batch.origin, batch.channel, publish_seq, store_seq});
}

bool group_commit::request_sync() {
  if (sync_requested_) return false;
  sync_requested_ = true;
  return true;
}

std::vector<group_commit::confirms> group_commit::synced(const std::vector<uint64_t>& failed) {
  sync_requested_ = false;
  confirm_grouping out;
  for (const auto& w : waiting_) {
    bool bad = std::find(failed.begin(), failed.end(), w.store_seq) != failed.end();
    out.add(w.origin, w.channel, w.publish_seq, !bad);
  }
  waiting_.clear();
  return out.take();
}

std::vector<group_commit::confirms> group_commit::refuse_all() {
  sync_requested_ = false;
  confirm_grouping out;
  for (const auto& w : waiting_) out.add(w.origin, w.channel, w.publish_seq, false);
  waiting_.clear();
  return out.take();
}

std::vector<group_commit::confirms> refusal_of(const publish_batch& batch) {
  group_commit::confirms c{batch.origin, batch.channel, {}, {}};
  for (const auto& item : batch.items)
    if (item.seq != 0) c.nacked.push_back(item.seq);
  if (!batch.origin || c.nacked.empty()) return {};
  return {std::move(c)};
}

std::string queue_core::describe() const {
  return std::string(kind()) + " " + quote(spec.name) + " in vhost " + quote(vhost);
}

caf::error unavailable_error(const queue_core& q) {
  return make_broker_error(reply_code::resource_error,
                           q.describe() + " is unavailable: " + q.unavailable);
}

namespace {

void become_unavailable(queue_core& q, std::string reason) {
  q.unavailable = std::move(reason);
  q.store.reset();
  log(log_level::error, q.kind(), q.describe() + " is unavailable: " + q.unavailable);
}

}  // namespace

void mark_unavailable(queue_core& q, const std::string& why) {
  // Whatever failed, the folder is left exactly as it is: a queue that starts empty over files
  // it could not read would later write over them.
  become_unavailable(q, "its files could not be loaded (" + why +
                            "); they are left untouched until a restart can read them");
}

void mark_sync_failed(queue_core& q, const std::string& why) {
  become_unavailable(q, "syncing its files failed (" + why +
                            "); it takes and serves nothing until a restart reads back what "
                            "is on disk");
}

std::string recovery_findings(const persistence::recovery_report& r) {
  auto n = [](size_t v) { return std::to_string(v); };
  std::string out;
  if (r.transient) out += ", " + n(r.transient) + " paged-out transient message(s) discarded";
  if (r.undecodable) out += ", " + n(r.undecodable) + " undecodable record(s) skipped";
  if (r.truncated_bytes) out += ", torn tail of " + n(r.truncated_bytes) + " byte(s) truncated";
  if (r.damaged_spans)
    out += ", " + n(r.damaged_bytes) + " damaged byte(s) skipped in " + n(r.damaged_spans) +
           " place(s)";
  if (r.unsure_marks)
    out += ", marks of " + n(r.unsure_marks) +
           " segment(s) lost: their messages come back redelivered";
  if (r.ignored_files) out += ", " + n(r.ignored_files) + " unknown file(s) left alone";
  return out;
}

caf::error delete_precondition(const queue_core& q, size_t consumers, uint64_t messages,
                               bool if_unused, bool if_empty, const char* what) {
  if (if_unused && consumers != 0)
    return make_broker_error(reply_code::precondition_failed,
                             q.describe() + " has " + std::to_string(consumers) + " consumer(s)");
  if (if_empty && messages != 0)
    return make_broker_error(reply_code::precondition_failed,
                             q.describe() + " has " + std::to_string(messages) + " " + what);
  return {};
}

queue_info core_info(const queue_core& q, size_t consumers) {
  queue_info info;
  info.vhost = q.vhost;
  info.spec = q.spec;
  info.stream = q.stream;
  info.consumers = static_cast<uint32_t>(consumers);
  info.traffic = q.traffic;
  info.unavailable = q.unavailable;
  info.memory_bytes = q.memory.queued() + (q.store ? q.store->index_bytes() : 0);
  if (q.store) {
    info.bytes_on_disk = q.store->bytes_on_disk();
    info.segments = static_cast<uint32_t>(q.store->segment_count());
  }
  return info;
}

void destroy_store(queue_core& q) {
  if (!q.store) return;
  try {
    q.store->destroy();
  } catch (const std::exception& e) {
    log(log_level::error, q.kind(), q.describe() + ": " + e.what());
  }
  q.store.reset();
}

}  // namespace warren
