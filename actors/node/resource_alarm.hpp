// Resource alarm: watches the memory the node counts for messages (memory_ledger: what queues
// hold in memory and their indexes of what is on disk) ten times a second and the free space of
// its data dir once a second. The count, unlike the resident set size, falls as queues drain, so
// the alarm clears. Each check also hands freed heap back to the system (malloc_trim) once the
// count fell by enough to matter, so that the resident size follows. When memory goes over its
// limit or free disk space under its limit, publishers must be held back (AMQP: connection.blocked,
// and their sockets are no longer read) until it clears, as RabbitMQ's memory and disk alarms do.
// Consumers keep going: they are what frees memory.
//
//   (subscribe_atom, actor)   the actor gets (blocked_atom, bool blocked, reason) now and at
//                             every change, until it goes away
#pragma once

#include "actors/common/protocol.hpp"
#include "actors/storage/memory_ledger.hpp"

#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace warren {

struct resource_limits {
  uint64_t memory_bytes = 0;  // counted memory above which publishers are blocked; 0 = none
  std::shared_ptr<memory_ledger> ledger;  // what is counted; without one, resident memory
  uint64_t disk_free_bytes = 0;  // free space of the data dir below which they are; 0 = none
  std::string data_dir;
};

/// The limits from the node's flags: memory as a fraction of physical RAM (at most 1) or in
/// bytes (above 1).
resource_limits make_resource_limits(double memory_watermark, std::shared_ptr<memory_ledger> ledger,
                                     uint64_t disk_free_bytes, std::string data_dir);

/// Its interface: subscriptions, and its own periodic check.
using resource_alarm_type =
    caf::typed_actor<caf::reacts_to<subscribe_atom, caf::actor>, caf::reacts_to<tick_atom>>;

struct resource_alarm_state {
  resource_limits limits;
  bool blocked = false;
  std::string reason;
  std::vector<caf::actor> subscribers;
  uint64_t counted_at_trim = 0;  // the ledger's total when freed heap was last handed back
  unsigned ticks = 0;
  std::string disk_reason;  // from the last disk check
  bool memory_alarm = false;
  static inline const char* name = "resource_alarm";
};

resource_alarm_type::behavior_type resource_alarm(
    resource_alarm_type::stateful_pointer<resource_alarm_state> self, resource_limits limits);

/// Resident set size of this process (0 where /proc cannot be read).
uint64_t resident_bytes();

}  // namespace warren
