#include "actors/cluster/peer_connector.hpp"

#include "actors/cluster/tcp_probe.hpp"
#include "actors/common/broker_error.hpp"

#include <memory>
#include <set>
#include <string>

namespace warren {

namespace {

// Under the cluster actor's 5 s wait for a connect (peer_timeout), so that it hears the reason;
// time for two SYNs (the kernel resends the first after 1 s).
constexpr auto probe_limit = std::chrono::seconds(3);

}  // namespace

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
        auto failed = [=](caf::error& err) mutable {
          *busy = false;
          rp.deliver(std::move(err));
        };
        auto connect = [=](std::string& address) mutable {
          self->request(through, caf::infinite, caf::connect_atom::value, std::move(address), port)
              .then(
                  [=](caf::node_id& node, caf::strong_actor_ptr& peer,
                      std::set<std::string>& interfaces) mutable {
                    *busy = false;
                    rp.deliver(std::move(node), std::move(peer), std::move(interfaces));
                  },
                  failed);
        };
        auto probe = self->spawn<caf::detached>(tcp_probe, std::chrono::milliseconds(probe_limit));
        self->request(probe, caf::infinite, caf::connect_atom::value, host, port)
            .then(connect, failed);
        return rp;
      },
  };
}

}  // namespace warren
