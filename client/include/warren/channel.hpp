// warren::client::channel: one session on a connection (own delivery tags, consumers, prefetch,
// confirm mode). Errors that the broker treats as channel errors (NOT_FOUND,
// PRECONDITION_FAILED, ACCESS_REFUSED, RESOURCE_LOCKED) close the channel: open a new one.
#pragma once

#include "warren/types.hpp"

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace warren::client {

class client_runtime;
struct connect_options;
class channel;
std::unique_ptr<channel> restore_grant(const connect_options& options, const std::string& token);

class channel {
 public:
  using message_handler = std::function<void(const delivery&)>;
  using cancel_handler =
      std::function<void(const std::string& consumer_tag, const std::string& reason)>;

  ~channel();
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;

  void exchange_declare(const std::string& name, const std::string& type,
                        const exchange_options& options = {});
  void exchange_delete(const std::string& name, bool if_unused = false);
  declare_ok queue_declare(const std::string& name, const queue_options& options = {});
  /// `force` deletes a stream whose consumer groups have not reached its end.
  uint32_t queue_delete(const std::string& name, bool if_unused = false, bool if_empty = false,
                        bool force = false);
  uint32_t queue_purge(const std::string& name);
  void queue_bind(const std::string& queue, const std::string& exchange, const std::string& key,
                  const field_table& arguments = {});
  void queue_unbind(const std::string& queue, const std::string& exchange, const std::string& key,
                    const field_table& arguments = {});
  /// What `source` routes by `key` goes on through exchange `destination` (AMQP exchange.bind).
  void exchange_bind(const std::string& destination, const std::string& source,
                     const std::string& key, const field_table& arguments = {});
  void exchange_unbind(const std::string& destination, const std::string& source,
                       const std::string& key, const field_table& arguments = {});

  /// Publishes one message and waits until every queue it was routed to has it.
  publish_result publish(const outbound_message& message);

  /// Publishes many messages in as few calls as their size allows, without waiting; the future
  /// holds one result per message, in order. Keep a few batches in flight for throughput.
  std::future<std::vector<publish_result>> publish_batch(std::vector<outbound_message> messages);

  /// Subscribes to a queue; `on_message` runs on the connection's worker thread. Returns the
  /// consumer tag. If `on_message` throws, the consumer ends: no more callbacks run, the broker
  /// requeues its unacked messages (marked redelivered) and `on_cancel` gets a reason starting
  /// "deliver failed: the message callback threw: " and the exception's what(). Once cancel() has
  /// returned, no callback of that consumer starts any more (one running at that moment finishes);
  /// once close() or the channel's destructor has returned, none of the channel's runs at all, so
  /// what the callbacks use may go. What the broker sent meanwhile stays unacked and goes back to
  /// the queue. (Called from a callback, close() and the destructor cannot wait for that callback:
  /// it finishes afterwards.)
  std::string consume(const std::string& queue, const consume_options& options,
                      message_handler on_message, cancel_handler on_cancel = {});
  void cancel(const std::string& consumer_tag);

  // --- streams (x-queue-type=stream) --------------------------------------------------------
  /// Subscribes to a stream from `offset`, in consumer `group` (empty: none); `prefetch` (at
  /// least 1) bounds unacked deliveries. Deliveries carry their stream_offset; ack them.
  std::string consume_stream(const std::string& queue, const stream_offset& offset,
                             const std::string& group, uint32_t prefetch,
                             message_handler on_message, cancel_handler on_cancel = {},
                             const std::string& tag = {});
  /// Stores `offset` as the last one `group` is done with.
  group_row commit_offset(const std::string& queue, const std::string& group, uint64_t offset);
  std::vector<group_row> list_groups(const std::string& queue);
  /// The stream's message at `offset`, without consuming it.
  std::optional<delivery> read_offset(const std::string& queue, uint64_t offset);

  /// Up to `count` (1-1000) ready messages from position `from`, left in the queue; each
  /// delivery's tag is its position.
  std::vector<delivery> peek(const std::string& queue, uint64_t from, uint32_t count);

  /// One message, or nothing when the queue has none ready.
  std::optional<delivery> get(const std::string& queue, bool no_ack = false);

  // Settling does not wait for the broker. A tag it refuses (unknown, or settled already) is
  // reported once, as a PRECONDITION_FAILED error thrown by the next call on this channel that
  // waits; the channel and its consumers stay open.
  void ack(uint64_t delivery_tag, bool multiple = false);
  void nack(uint64_t delivery_tag, bool multiple = false, bool requeue = true);
  void reject(uint64_t delivery_tag, bool requeue = true);

  void qos(uint32_t prefetch);
  void confirm_select();
  void recover();
  std::optional<lookup_result> lookup(const message_id& id);
  void close();

  struct state;

 private:
  friend class connection;
  friend std::unique_ptr<channel> restore_grant(const connect_options& options,
                                                const std::string& token);
  channel(std::shared_ptr<client_runtime> runtime, std::shared_ptr<state> state);
  void settle(uint64_t tag, bool multiple, int kind);

  std::shared_ptr<client_runtime> runtime_;
  std::shared_ptr<state> state_;
  bool closed_ = false;
};

}  // namespace warren::client
