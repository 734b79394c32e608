// session: transactions (tx.select, tx.commit, tx.rollback), as RabbitMQ has them on one node.
//
// A transactional channel keeps its publishes and its acks, nacks and rejects in the session
// until tx.commit; the commit sends them to the broker in the order they came (publishes, then
// settlements) and answers commit-ok once every queue has taken its messages (persistent ones
// are on disk, as for a publisher confirm) and every settlement was accepted. A rollback
// forgets them: rolled-back acks never happened, so those deliveries are still unacked. An
// unknown delivery tag is reported at the commit that carries it.
#include "net/amqp/session.hpp"

#include <caf/send.hpp>

namespace warren::amqp {

void session::on_tx_select(uint16_t id, channel& ch, method_id m, reader&) {
  if (ch.confirm)
    return channel_error(id, reply_code::precondition_failed,
                         "cannot switch from confirm to tx mode", m);
  ch.tx = true;
  send_method(id, method_payload(tx_select_ok));
}

void session::on_tx_commit(uint16_t id, channel& ch, method_id m, reader&) {
  if (!ch.tx)
    return channel_error(id, reply_code::precondition_failed, "channel is not transactional", m);
  auto settles = std::move(ch.tx_settles);
  ch.tx_settles.clear();
  recount_tx(ch);
  // The publishes, then each settlement, answer for one part; the last answer sends commit-ok,
  // unless a queue refused a message: then, as RabbitMQ, the channel closes with 406 (what the
  // other queues took stays taken).
  auto parts = std::make_shared<size_t>(settles.size() + (ch.tx_publishes.empty() ? 0 : 1) + 1);
  auto refused = std::make_shared<bool>(false);
  auto part_done = [this, id, m, parts, refused] {
    if (--*parts != 0) return;
    auto c = channels_.find(id);
    if (c == channels_.end() || c->second.settling()) return;
    if (*refused)
      channel_error(id, reply_code::precondition_failed, "partial tx completion", m);
    else
      send_method(id, method_payload(tx_commit_ok));
  };
  if (!ch.tx_publishes.empty()) {
    ch.gathered = std::move(ch.tx_publishes);
    ch.tx_publishes.clear();
    ch.tx_bytes = 0;
    recount_tx(ch);
    send_publishes(id, ch, [part_done, refused](const std::vector<publish_outcome>& outcomes) {
      for (auto o : outcomes)
        if (o == publish_outcome::rejected) *refused = true;
      part_done();
    });
  }
  for (const auto& s : settles)
    send_settle(id, s.method, s.tag, s.multiple, s.kind,
                [part_done](request_answer&) { part_done(); });
  part_done();
}

void session::on_tx_rollback(uint16_t id, channel& ch, method_id m, reader&) {
  if (!ch.tx)
    return channel_error(id, reply_code::precondition_failed, "channel is not transactional", m);
  ch.tx_publishes.clear();
  ch.tx_bytes = 0;
  ch.tx_settles.clear();
  recount_tx(ch);
  send_method(id, method_payload(tx_rollback_ok));
}

void session::recount_tx(channel& ch) {
  uint64_t now = ch.tx_bytes + ch.tx_settles.size() * sizeof(channel::tx_settle);
  tx_held_ = tx_held_ - ch.tx_counted + now;
  ch.tx_counted = now;
  tx_memory_.set(0, 0, tx_held_);
}

}  // namespace warren::amqp
