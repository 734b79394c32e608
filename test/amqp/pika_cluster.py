#!/usr/bin/python3
"""pika across the nodes of a cluster (Debian's python3-pika):

    pika_cluster.py DECLARE_PORT PUBLISH_PORT CONSUME_PORT

A durable queue and a topic binding are declared through the first node's AMQP port, persistent
messages published with confirms through the second, and consumed with manual acks through the
third. Exits non-zero on the first mismatch.
"""
import sys
import time

import pika

DECLARE, PUBLISH, CONSUME = (int(p) for p in sys.argv[1:4])
PATIENCE = 30  # seconds: a guard against hanging, never a speed expectation
COUNT = 200


def connect(port):
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))


def expect(cond, what):
    if not cond:
        print("FAILED:", what, file=sys.stderr)
        sys.exit(1)


declaring = connect(DECLARE)
dch = declaring.channel()
dch.exchange_declare("cross.topic", "topic", durable=True)
dch.queue_declare("cross", durable=True)
dch.queue_bind("cross", "cross.topic", "orders.#")

publishing = connect(PUBLISH)
pch = publishing.channel()
pch.confirm_delivery()
persistent = pika.BasicProperties(delivery_mode=2)

# Bindings reach the other members a moment after the bind is answered: until this node has
# it, a mandatory publish comes back unroutable.
deadline = time.monotonic() + PATIENCE
while True:
    try:
        pch.basic_publish("cross.topic", "orders.probe", b"probe", persistent, mandatory=True)
        break
    except pika.exceptions.UnroutableError:
        expect(time.monotonic() < deadline, "the binding never reached the publishing node")
        time.sleep(0.05)
for i in range(COUNT):
    pch.basic_publish("cross.topic", "orders.eu.%d" % i, b"m%d" % i, persistent, mandatory=True)

consuming = connect(CONSUME)
cch = consuming.channel()
cch.basic_qos(prefetch_count=20)
got = []


def on_message(c, method, props, body):
    got.append((body, method.redelivered, props.delivery_mode))
    c.basic_ack(method.delivery_tag)
    if len(got) == COUNT + 1:
        c.stop_consuming()


tag = cch.basic_consume("cross", on_message)
consuming.call_later(PATIENCE, cch.stop_consuming)
cch.start_consuming()
expect(len(got) == COUNT + 1, "consumed %d of %d" % (len(got), COUNT + 1))
expect([b for b, _, _ in got] == [b"probe"] + [b"m%d" % i for i in range(COUNT)],
       "bodies out of order: %r" % [b for b, _, _ in got][:10])
expect(not any(r for _, r, _ in got), "a first delivery was marked redelivered")
expect(all(m == 2 for _, _, m in got), "delivery_mode was not kept")

# The acks settle on the queue's node; a passive declare through the publishing node sees it.
deadline = time.monotonic() + PATIENCE
while True:
    ok = pch.queue_declare("cross", passive=True)
    if ok.method.message_count == 0:
        break
    expect(time.monotonic() < deadline, "messages left: %d" % ok.method.message_count)
    time.sleep(0.05)
cch.basic_cancel(tag)
method, _, _ = cch.basic_get("cross", auto_ack=True)
expect(method is None, "basic.get of the drained queue returned a message")
for conn in (declaring, publishing, consuming):
    conn.close()
print("ok")
