// The arguments of the channel methods a client sends, decoded from a method payload (after its
// class and method ids) into plain structs. The session acts on these and never reads raw bytes;
// every decoder checks lengths through `reader` and throws protocol_error on a short payload.
#pragma once

#include "net/amqp/codec.hpp"
#include "net/amqp/frame.hpp"

#include <cstdint>
#include <string>

namespace warren::amqp::args {

struct publish {
  std::string exchange, routing_key;
  bool mandatory = false, immediate = false;
};
struct ack {
  uint64_t tag = 0;
  bool multiple = false;
};
/// basic.nack and basic.reject (which has no `multiple`).
struct settle {
  uint64_t tag = 0;
  bool multiple = false, requeue = true;
};
struct close {
  uint16_t code = 0;
  std::string text;
  method_id failed;
};
struct flow {
  bool active = true;
};
struct exchange_declare {
  std::string name, type;
  bool passive = false, durable = false, auto_delete = false, internal = false, no_wait = false;
  table arguments;
};
struct exchange_delete {
  std::string name;
  bool if_unused = false, no_wait = false;
};
/// queue.bind / queue.unbind (destination = queue) and exchange.bind / exchange.unbind.
struct binding {
  std::string destination, source, key;
  bool no_wait = false;
  table arguments;
};
struct queue_declare {
  std::string name;
  bool passive = false, durable = false, exclusive = false, auto_delete = false, no_wait = false;
  table arguments;
};
/// queue.purge (no if-unused / if-empty) and queue.delete.
struct queue_drop {
  std::string name;
  bool if_unused = false, if_empty = false, no_wait = false;
};
struct qos {
  uint32_t prefetch_size = 0;
  uint16_t prefetch_count = 0;
  bool global = false;
};
struct consume {
  std::string queue, tag;
  bool no_local = false, no_ack = false, exclusive = false, no_wait = false;
  table arguments;
};
struct cancel {
  std::string tag;
  bool no_wait = false;
};
struct get {
  std::string queue;
  bool no_ack = false;
};
/// basic.recover, basic.recover-async and confirm.select: one flag each.
struct flag {
  bool value = false;
};

publish read_publish(reader& r);
ack read_ack(reader& r);
settle read_nack(reader& r);
settle read_reject(reader& r);
close read_close(reader& r);
flow read_flow(reader& r);
exchange_declare read_exchange_declare(reader& r);
exchange_delete read_exchange_delete(reader& r);
/// `m` tells queue.bind (which has no-wait) from queue.unbind (which has not), and both from
/// exchange.bind / exchange.unbind.
binding read_binding(method_id m, reader& r);
queue_declare read_queue_declare(reader& r);
queue_drop read_queue_purge(reader& r);
queue_drop read_queue_delete(reader& r);
qos read_qos(reader& r);
consume read_consume(reader& r);
cancel read_cancel(reader& r);
get read_get(reader& r);
flag read_flag(reader& r);

}  // namespace warren::amqp::args
