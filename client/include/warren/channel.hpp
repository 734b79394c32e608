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
  uint32_t queue_delete(const std::string& name, bool if_unused = false, bool if_empty = false);
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
  /// consumer tag.
  std::string consume(const std::string& queue, const consume_options& options,
                      message_handler on_message, cancel_handler on_cancel = {});
  void cancel(const std::string& consumer_tag);

  /// One message, or nothing when the queue has none ready.
  std::optional<delivery> get(const std::string& queue, bool no_ack = false);

  // Settling does not wait for the broker; a bad tag closes the channel, which the next
  // waiting call reports.
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
  channel(std::shared_ptr<client_runtime> runtime, std::shared_ptr<state> state);
  void settle(uint64_t tag, bool multiple, int kind);

  std::shared_ptr<client_runtime> runtime_;
  std::shared_ptr<state> state_;
  bool closed_ = false;
};

}  // namespace warren::client
