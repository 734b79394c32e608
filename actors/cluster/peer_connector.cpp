#include "actors/cluster/peer_connector.hpp"

#include "actors/common/broker_error.hpp"

#include <memory>
#include <set>
#include <string>

namespace warren {

caf::behavior peer_connector(caf::event_based_actor* self, caf::io::middleman_actor through) {
  // CAF's middleman actor ignores every exit reason but kill.
  self->attach_functor(
      [through](const caf::error&) { caf::anon_send_exit(through, caf::exit_reason::kill); });
  auto busy = std::make_shared<bool>(false);
  return {
      [=](caf::connect_atom, std::string& host, uint16_t port)
          -> caf::result<caf::node_id, caf::strong_actor_ptr, std::set<std::string>> {
        if (*busy)
          return make_broker_error(reply_code::resource_error,
                                   "still connecting to " + host + ":" + std::to_string(port));
        *busy = true;
        auto rp = self->make_response_promise<caf::node_id, caf::strong_actor_ptr,
                                              std::set<std::string>>();
        self->request(through, caf::infinite, caf::connect_atom::value, host, port)
            .then(
                [=](caf::node_id& node, caf::strong_actor_ptr& peer,
                    std::set<std::string>& interfaces) mutable {
                  *busy = false;
                  rp.deliver(std::move(node), std::move(peer), std::move(interfaces));
                },
                [=](caf::error& err) mutable {
                  *busy = false;
                  rp.deliver(std::move(err));
                });
        return rp;
      },
  };
}

}  // namespace warren
