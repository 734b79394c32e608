#include "actors/vhost/refusing_queue.hpp"

#include "actors/common/protocol.hpp"

#include <vector>

namespace warren {

caf::behavior refusing_queue(caf::event_based_actor* self) {
  return {
      [=](enqueue_atom, const publish_batch& batch) {
        std::vector<uint64_t> nacked;
        for (const auto& item : batch.items)
          if (item.seq != 0) nacked.push_back(item.seq);
        if (batch.origin && !nacked.empty())
          self->send(batch.origin, confirm_atom::value, batch.channel, std::vector<uint64_t>{},
                     std::move(nacked));
      },
  };
}

}  // namespace warren
