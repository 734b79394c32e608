#include "actors/node/resource_alarm.hpp"

#include "actors/common/actor_defaults.hpp"
#include "core/log.hpp"

#include <malloc.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>

#include <caf/send.hpp>
#include <chrono>
#include <fstream>

namespace warren {

namespace {

using self_ptr = resource_alarm_type::stateful_pointer<resource_alarm_state>;

// Memory is judged ten times a second: a publisher at full speed adds tens of MiB a second, and
// a check once a second let the count run that far past its limit. The disk, whose free space
// takes a system call, and handing freed heap back, once a second.
constexpr auto check_interval = std::chrono::milliseconds(100);
constexpr unsigned disk_every = 10;

std::string mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

// Once the counted memory fell this far since the last trim, freed heap is handed back.
constexpr uint64_t trim_step = 64 << 20;

// Why publishers must wait for memory, or empty when they need not. Once on (`on`), the alarm
// stays on until the count is 5% under the limit: judged ten times a second without that margin,
// a count hovering at the limit blocked and released publishers, and logged, as often.
std::string memory_reason(const resource_limits& limits, bool on) {
  if (limits.memory_bytes == 0) return {};
  uint64_t used = limits.ledger ? limits.ledger->total() : resident_bytes();
  uint64_t threshold = on ? limits.memory_bytes - limits.memory_bytes / 20 : limits.memory_bytes;
  if (used <= threshold) return {};
  return "memory alarm: " + mib(used) + (limits.ledger ? " held for messages" : " resident") +
         " (" + mib(resident_bytes()) + " resident), limit " + mib(limits.memory_bytes);
}

std::string disk_reason(const resource_limits& limits) {
  if (limits.disk_free_bytes == 0) return {};
  struct statvfs fs {};
  if (statvfs(limits.data_dir.c_str(), &fs) != 0) return {};
  uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= limits.disk_free_bytes) return {};
  return "disk alarm: " + mib(free) + " free in " + limits.data_dir + ", limit " +
         mib(limits.disk_free_bytes);
}

// Subscribers are connections and the AMQP door's relay actors, which take no other message
// from here: sent untyped (CAF lets typed actors send() only to typed ones).
void tell(self_ptr self, const caf::actor& subscriber, bool blocked, const std::string& reason) {
  caf::send_as(caf::actor_cast<caf::actor>(self), subscriber, blocked_atom::value, blocked, reason);
}

// glibc keeps freed memory in its arenas; after queues drained, give it back so that the
// resident size (shown in the stats) comes down with the count.
void trim_heap(resource_alarm_state& st) {
  if (!st.limits.ledger) return;
  auto counted = st.limits.ledger->total();
  if (counted > st.counted_at_trim) st.counted_at_trim = counted;
  if (st.counted_at_trim - counted < trim_step) return;
  malloc_trim(0);
  st.counted_at_trim = counted;
}

void check(self_ptr self) {
  auto& st = self->state;
  if (st.ticks++ % disk_every == 0) {
    trim_heap(st);
    st.disk_reason = disk_reason(st.limits);
  }
  auto reason = memory_reason(st.limits, st.memory_alarm);
  st.memory_alarm = !reason.empty();
  if (reason.empty()) reason = st.disk_reason;
  bool blocked = !reason.empty();
  if (blocked != st.blocked) {
    st.blocked = blocked;
    st.reason = reason;
    if (blocked)
      log(log_level::warn, "alarm", reason + "; publishers are held back");
    else
      log(log_level::info, "alarm", "resources are back under their limits; publishers resume");
    for (const auto& s : st.subscribers) tell(self, s, blocked, reason);
  }
  self->delayed_send(self, check_interval, tick_atom::value);
}

}  // namespace

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

resource_limits make_resource_limits(double memory_watermark, std::shared_ptr<memory_ledger> ledger,
                                     uint64_t disk_free_bytes, std::string data_dir) {
  resource_limits limits;
  auto ram =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  limits.memory_bytes = memory_watermark > 1
                            ? static_cast<uint64_t>(memory_watermark)
                            : static_cast<uint64_t>(static_cast<double>(ram) * memory_watermark);
  limits.ledger = std::move(ledger);
  limits.disk_free_bytes = disk_free_bytes;
  limits.data_dir = std::move(data_dir);
  return limits;
}

resource_alarm_type::behavior_type resource_alarm(
    resource_alarm_type::stateful_pointer<resource_alarm_state> self, resource_limits limits) {
  install_actor_defaults(self, "resource_alarm");
  self->state.limits = std::move(limits);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) { return a.address() == dm.source; }),
               subs.end());
  });
  check(self);
  return {
      [=](tick_atom) { check(self); },
      [=](subscribe_atom, const caf::actor& subscriber) {
        self->monitor(subscriber);
        self->state.subscribers.push_back(subscriber);
        tell(self, subscriber, self->state.blocked, self->state.reason);
      },
  };
}

}  // namespace warren
