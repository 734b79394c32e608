// gather(): ask several actors the same question and continue once all have answered.
// Answers from actors that fail or went away are left out, so one dead queue cannot stall a
// listing.
#pragma once

#include <caf/actor.hpp>
#include <caf/error.hpp>

#include <memory>
#include <vector>

namespace warren {

/// `ask(target)` sends the request and returns its response handle; `done(answers)` runs once,
/// in the actor's context, after every target answered or failed.
template <class T, class Ask, class Done>
void gather(const std::vector<caf::actor>& targets, Ask ask, Done done) {
  if (targets.empty()) {
    done(std::vector<T>{});
    return;
  }
  struct pending {
    size_t left;
    std::vector<T> answers;
  };
  auto acc = std::make_shared<pending>(pending{targets.size(), {}});
  for (const auto& target : targets) {
    ask(target).then(
        [=](T& answer) mutable {
          acc->answers.push_back(std::move(answer));
          if (--acc->left == 0) done(std::move(acc->answers));
        },
        [=](caf::error&) mutable {
          if (--acc->left == 0) done(std::move(acc->answers));
        });
  }
}

}  // namespace warren

namespace warren {

/// Like gather() for requests answered with nothing: `done()` runs once all have answered or
/// failed.
template <class Ask, class Done>
void await_all(const std::vector<caf::actor>& targets, Ask ask, Done done) {
  if (targets.empty()) {
    done();
    return;
  }
  auto left = std::make_shared<size_t>(targets.size());
  for (const auto& target : targets) {
    ask(target).then(
        [=]() mutable {
          if (--*left == 0) done();
        },
        [=](caf::error&) mutable {
          if (--*left == 0) done();
        });
  }
}

}  // namespace warren
