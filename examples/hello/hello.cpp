// Publish with a confirm, consume with an ack, handle a broker error: Warren's C++ client from
// an installed package. Usage: hello [PORT]
#include <warren/channel.hpp>
#include <warren/client_error.hpp>
#include <warren/connection.hpp>

#include <future>
#include <iostream>

int main(int argc, char** argv) {
  warren::client::connect_options options;
  if (argc > 1) options.port = static_cast<uint16_t>(std::stoi(argv[1]));
  try {
    auto conn = warren::client::connection::open(options);
    auto ch = conn->open_channel();
    warren::client::queue_options durable;
    durable.durable = true;
    ch->queue_declare("hello", durable);
    ch->confirm_select();  // publish() now returns once the message is on disk

    warren::client::outbound_message msg;
    msg.routing_key = "hello";  // the default exchange routes by queue name
    msg.body = "hello, warren";
    msg.properties.persistent = true;
    auto result = ch->publish(msg);
    std::cout << "published " << warren::to_string(result.id) << ": "
              << warren::to_string(result.outcome) << "\n";

    std::promise<std::string> received;
    warren::client::consume_options consume;
    consume.prefetch = 10;
    auto tag = ch->consume("hello", consume, [&](const warren::client::delivery& d) {
      ch->ack(d.delivery_tag);
      received.set_value(d.body);  // one message in this queue
    });
    std::cout << "received: " << received.get_future().get() << "\n";
    ch->cancel(tag);

    ch->queue_declare("hello", {});  // not durable, so not the queue that exists: refused
  } catch (const warren::client::error& e) {
    std::cout << "refused: " << e.code() << "\n";  // PRECONDITION_FAILED
    return 0;
  }
  return 1;
}
