// metadata_log's answers to proposals (metadata_log.hpp): an entry applied is answered once
// LMDB holds it, which the check after each loop iteration writes (metadata_fsm's grouped
// commits); a failed one at once, as of unknown outcome.
#include "persistence/metadata_log.hpp"

#include <algorithm>
#include <string>

namespace warren::persistence {

// A failed entry may have reached a majority before its leader stepped down or closed: a later
// leader commits it then. Its answer says so rather than that it was refused. An entry applied
// is answered once LMDB holds it (write_applied).
void metadata_log::on_applied(struct raft_apply* req, int status, void* result) {
  auto* p = static_cast<proposal*>(req->data);
  const auto* applied = static_cast<const metadata_fsm::outcome*>(result);
  if (status == 0) p->log->notice_due_ = true;
  if (status == 0 && applied != nullptr && applied->deferred) {
    p->log->answer_when_written_.emplace(req->index, p);
    return;
  }
  if (status != 0)
    p->done(std::string("outcome unknown: ") + raft_strerror(status) +
                " before the change was committed; it may still be applied",
            0);
  else
    answer_applied(p, req->index, applied != nullptr ? *applied : metadata_fsm::outcome{});
  delete p;
}

void metadata_log::answer_applied(proposal* p, uint64_t index,
                                  const metadata_fsm::outcome& applied) {
  if (applied.seed_ignored)
    p->done("the metadata log was seeded before", index);
  else if (applied.refused)
    p->done(conflict + std::to_string(applied.failed_condition) + " does not hold", index);
  else
    p->done({}, index);
}

// From the check after each loop iteration: the entries raft applied in it go to LMDB in one
// transaction, and then their proposers are answered. When the write fails, they wait for the
// next iteration's.
bool metadata_log::write_applied() {
  if (!fsm_.write_applied()) return false;
  auto written = fsm_.take_written();
  auto durable = fsm_.applied_durably();
  while (!answer_when_written_.empty() && answer_when_written_.begin()->first <= durable) {
    auto [index, p] = *answer_when_written_.begin();
    answer_when_written_.erase(answer_when_written_.begin());
    auto at = std::lower_bound(written.begin(), written.end(), index,
                               [](const auto& w, uint64_t i) { return w.first < i; });
    answer_applied(
        p, index, at != written.end() && at->first == index ? at->second : metadata_fsm::outcome{});
    delete p;
  }
  return true;
}

}  // namespace warren::persistence
