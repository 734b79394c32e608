// node_query: asks the node actor from the management door's kj thread.
//
// Each ask spawns a one-shot actor that sends the request and posts the answer back onto the
// loop, where the query (if it still exists) fulfils the promise. The node answers it as an
// internal asker, not as a user: the door itself decides what the user may see. Only requests
// that need no user's rights go this way (statistics, listings of vhosts and nodes, logging in).
#pragma once

#include "actors/common/broker_error.hpp"
#include "actors/common/node_protocol.hpp"
#include "net/capnp/pending_answers.hpp"
#include "transport/loop_bridge.hpp"

#include <kj/async.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

namespace warren::net::http {

class node_query : public std::enable_shared_from_this<node_query> {
 public:
  node_query(caf::actor_system& system, caf::actor node,
             std::shared_ptr<transport::loop_bridge> bridge)
      : system_(system), node_(std::move(node)), bridge_(std::move(bridge)) {}

  /// Sends (xs...) to the node; the promise holds its answer, of types Rs..., as one message,
  /// or rejects with the broker's error ("NOT_FOUND: ...").
  template <class... Rs, class... Ts>
  kj::Promise<caf::message> ask(Ts... xs) {
    auto request = answers_.open();
    auto id = request.id;
    std::weak_ptr<node_query> weak = shared_from_this();
    auto bridge = bridge_;
    auto back = [weak, bridge, id](caf::error err, caf::message result) {
      bridge->post([weak, id, err, result]() mutable {
        if (auto q = weak.lock()) q->answers_.complete(id, std::move(err), std::move(result));
      });
    };
    system_.spawn([node = node_, back, xs...](caf::event_based_actor* self) {
      self->request(node_handle(node), std::chrono::seconds(30), xs...)
          .then([=](Rs&... rs) { back({}, caf::make_message(std::move(rs)...)); },
                [=](caf::error& err) { back(err, {}); });
    });
    return kj::mv(request.answer);
  }

 private:
  caf::actor_system& system_;
  caf::actor node_;
  std::shared_ptr<transport::loop_bridge> bridge_;
  net::pending_answers<caf::message> answers_;
};

}  // namespace warren::net::http
