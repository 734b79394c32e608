#include "net/amqp/method_args.hpp"

#include "net/amqp/methods.hpp"

namespace warren::amqp::args {

publish read_publish(reader& r) {
  publish p;
  r.short_uint();  // reserved
  p.exchange = r.short_string();
  p.routing_key = r.short_string();
  auto flags = r.bits(2);
  p.mandatory = flags[0];
  p.immediate = flags[1];
  return p;
}

ack read_ack(reader& r) {
  ack a;
  a.tag = r.longlong_uint();
  a.multiple = r.bits(1)[0];
  return a;
}

settle read_nack(reader& r) {
  settle s;
  s.tag = r.longlong_uint();
  auto flags = r.bits(2);
  s.multiple = flags[0];
  s.requeue = flags[1];
  return s;
}

settle read_reject(reader& r) {
  settle s;
  s.tag = r.longlong_uint();
  s.requeue = r.bits(1)[0];
  return s;
}

close read_close(reader& r) {
  close c;
  c.code = r.short_uint();
  c.text = r.short_string();
  c.failed.class_id = r.short_uint();
  c.failed.method = r.short_uint();
  return c;
}

flow read_flow(reader& r) {
  return {r.bits(1)[0]};
}

exchange_declare read_exchange_declare(reader& r) {
  exchange_declare d;
  r.short_uint();  // reserved
  d.name = r.short_string();
  d.type = r.short_string();
  auto flags = r.bits(5);
  d.passive = flags[0];
  d.durable = flags[1];
  d.auto_delete = flags[2];
  d.internal = flags[3];
  d.no_wait = flags[4];
  d.arguments = r.field_table();
  return d;
}

exchange_delete read_exchange_delete(reader& r) {
  exchange_delete d;
  r.short_uint();
  d.name = r.short_string();
  auto flags = r.bits(2);
  d.if_unused = flags[0];
  d.no_wait = flags[1];
  return d;
}

binding read_binding(method_id m, reader& r) {
  binding b;
  r.short_uint();
  b.destination = r.short_string();
  b.source = r.short_string();
  b.key = r.short_string();
  if (!(m == methods::queue_unbind)) b.no_wait = r.bits(1)[0];
  b.arguments = r.field_table();
  return b;
}

queue_declare read_queue_declare(reader& r) {
  queue_declare d;
  r.short_uint();
  d.name = r.short_string();
  auto flags = r.bits(5);
  d.passive = flags[0];
  d.durable = flags[1];
  d.exclusive = flags[2];
  d.auto_delete = flags[3];
  d.no_wait = flags[4];
  d.arguments = r.field_table();
  return d;
}

queue_drop read_queue_purge(reader& r) {
  queue_drop d;
  r.short_uint();
  d.name = r.short_string();
  d.no_wait = r.bits(1)[0];
  return d;
}

queue_drop read_queue_delete(reader& r) {
  queue_drop d;
  r.short_uint();
  d.name = r.short_string();
  auto flags = r.bits(3);
  d.if_unused = flags[0];
  d.if_empty = flags[1];
  d.no_wait = flags[2];
  return d;
}

qos read_qos(reader& r) {
  qos q;
  q.prefetch_size = r.long_uint();
  q.prefetch_count = r.short_uint();
  q.global = r.bits(1)[0];
  return q;
}

consume read_consume(reader& r) {
  consume c;
  r.short_uint();
  c.queue = r.short_string();
  c.tag = r.short_string();
  auto flags = r.bits(4);
  c.no_local = flags[0];
  c.no_ack = flags[1];
  c.exclusive = flags[2];
  c.no_wait = flags[3];
  c.arguments = r.field_table();
  return c;
}

cancel read_cancel(reader& r) {
  cancel c;
  c.tag = r.short_string();
  c.no_wait = r.bits(1)[0];
  return c;
}

get read_get(reader& r) {
  get g;
  r.short_uint();
  g.queue = r.short_string();
  g.no_ack = r.bits(1)[0];
  return g;
}

flag read_flag(reader& r) {
  return {r.bits(1)[0]};
}

}  // namespace warren::amqp::args
