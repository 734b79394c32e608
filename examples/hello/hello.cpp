// Warren's C++ client in one program: publish with confirms, consume with acks, handle errors.
// Built from the installed package and run against a node by package_test; the README shows it
// whole. Usage: hello [PORT]
#include <warren/channel.hpp>
#include <warren/client_error.hpp>
#include <warren/connection.hpp>

#include <condition_variable>
#include <iostream>
#include <mutex>

using namespace warren::client;

int main(int argc, char** argv) {
  connect_options options;  // 127.0.0.1:5680, vhost "/", guest/guest; TLS if asked
  if (argc > 1) options.port = static_cast<uint16_t>(std::stoi(argv[1]));
  // Shared with the consumer callback, which runs on the connection's worker thread. Declared
  // before the connection so that it outlives every callback.
  std::mutex mutex;
  std::condition_variable all_handled;
  int handled = 0;
  try {
    auto conn = connection::open(options);
    auto ch = conn->open_channel();

    // A durable queue, and confirm mode: a publish returns once its queues have the message,
    // on disk for persistent messages in durable queues.
    queue_options durable;
    durable.durable = true;
    ch->queue_declare("orders", durable);
    ch->confirm_select();

    // Publish 100 persistent messages in as few calls as their size allows; the future is
    // ready when every one is confirmed.
    std::vector<outbound_message> batch(100);
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].routing_key = "orders";  // the default exchange routes by queue name
      batch[i].body = "order " + std::to_string(i);
      batch[i].properties.persistent = true;
    }
    size_t confirmed = 0;
    for (const auto& result : ch->publish_batch(std::move(batch)).get())
      if (result.outcome == publish_outcome::routed) ++confirmed;
    std::cout << "confirmed " << confirmed << "\n";

    // Consume with acks: at most 50 unacknowledged at a time. A message is acked once handled;
    // one whose callback throws is not: the consumer ends and the broker requeues it.
    consume_options consume;
    consume.prefetch = 50;
    auto on_message = [&](const delivery& d) {
      ch->ack(d.delivery_tag);
      std::lock_guard<std::mutex> guard(mutex);
      if (++handled == 100) all_handled.notify_one();
    };
    auto on_cancel = [](const std::string& tag, const std::string& reason) {
      std::cerr << "consumer " << tag << " ended: " << reason << "\n";
    };
    auto tag = ch->consume("orders", consume, on_message, on_cancel);
    {
      std::unique_lock<std::mutex> lock(mutex);
      all_handled.wait(lock, [&] { return handled == 100; });
    }
    ch->cancel(tag);
    std::cout << "handled " << handled << "\n";

    // A refused call throws warren::client::error: code() is the broker's code name, kind()
    // the same as an enum. Errors such as this one close the channel: open another.
    try {
      ch->queue_declare("orders", {});  // not durable: not the queue that exists
    } catch (const error& e) {
      if (e.kind() != error_code::precondition_failed) throw;
      std::cout << "refused: " << e.code() << "\n";
    }
    ch = conn->open_channel();
    ch->queue_delete("orders");
  } catch (const error& e) {
    std::cerr << "error: " << e.what() << "\n";  // "DISCONNECTED: ...", "ACCESS_REFUSED: ..."
    return 1;
  }
  return 0;
}
