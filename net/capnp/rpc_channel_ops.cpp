#include "net/capnp/rpc_channel_ops.hpp"

namespace warren::net {

namespace {

// Largest DeliveryWindow a consume may ask for.
constexpr uint32_t max_window_calls = 64;
constexpr uint32_t max_window_batch = 10000;

}  // namespace

rpc_session::delivery_window channel_ops::read_window(rpc::DeliveryWindow::Reader w,
                                                      consume_request& c) {
  rpc_session::delivery_window window;
  if (w.getMaxCalls() > max_window_calls || w.getMaxBatch() > max_window_batch)
    throw_failure({reply_code::precondition_failed,
                   "delivery window " + std::to_string(w.getMaxCalls()) + " calls of " +
                       std::to_string(w.getMaxBatch()) + " deliveries is over the limit of " +
                       std::to_string(max_window_calls) + " calls of " +
                       std::to_string(max_window_batch)});
  if (w.getMaxCalls() != 0) window.max_calls = w.getMaxCalls();
  if (w.getMaxBatch() != 0) window.max_batch = w.getMaxBatch();
  c.window = window.max_calls * window.max_batch;
  return window;
}

kj::Promise<void> channel_ops::cancel(const std::string& tag) {
  auto session = session_;
  auto id = id_;
  return ask([&](uint64_t r) { conn().cancel(r, id_, tag, true); })
      .then([session, id, tag](request_answer) { session->remove_consumer(id, tag); });
}

kj::Promise<void> channel_ops::settle(uint64_t tag, bool multiple, settle_kind kind) {
  return ask([&](uint64_t r) { conn().settle(r, id_, tag, multiple, kind); }).ignoreResult();
}

kj::Promise<void> channel_ops::ack_each(capnp::List<uint64_t>::Reader list) {
  std::vector<uint64_t> tags;
  tags.reserve(list.size());
  for (auto tag : list) tags.push_back(tag);
  return ask([&](uint64_t r) { conn().ack_each(r, id_, std::move(tags)); }).ignoreResult();
}

void channel_ops::write_get(const request_answer& answer, rpc::Channel::GetResult::Builder out) {
  if (std::holds_alternative<std::monostate>(answer)) {
    out.setEmpty();
    return;
  }
  write_delivery(answer_as<delivery>(answer), {}, out.initDelivery());
}

void write_publish_result(const message_id& id, publish_outcome outcome,
                          rpc::PublishResult::Builder out) {
  out.setId(kj::arrayPtr(id.bytes.data(), id.bytes.size()));
  out.setOutcome(static_cast<rpc::PublishResult::Outcome>(outcome));
}

}  // namespace warren::net
