#!/usr/bin/python3
"""Scenarios run with pika (Debian's python3-pika) against a Warren node's AMQP port.

    pika_scenarios.py PORT SCENARIO

Each scenario asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
"""
import os
import signal
import subprocess
import sys
import time

import pika

PORT = int(sys.argv[1])
SCENARIO = sys.argv[2]
PATIENCE = 30  # seconds: a guard against hanging, never a speed expectation


def connect(**kw):
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", PORT, **kw))


def expect(cond, what):
    if not cond:
        print("FAILED:", what, file=sys.stderr)
        sys.exit(1)


def drain(conn, ch, queue, n, ack=True, requeue_first=False):
    """Consumes n messages and returns (method, properties, body) tuples."""
    got = []

    def on_message(c, method, props, body):
        got.append((method, props, body))
        if ack:
            c.basic_ack(method.delivery_tag)
        if len(got) >= n:
            c.stop_consuming()

    tag = ch.basic_consume(queue, on_message)
    deadline = time.time() + PATIENCE
    while len(got) < n and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    ch.basic_cancel(tag)
    expect(len(got) == n, f"expected {n} messages from {queue}, got {len(got)}")
    return got


def declare_bind_publish_consume():
    conn = connect()
    ch = conn.channel()
    ch.exchange_declare("orders", exchange_type="topic", durable=True)
    ch.queue_declare("eu", durable=True)
    ch.queue_declare("all", durable=True)
    ch.queue_bind("eu", "orders", "eu.*")
    ch.queue_bind("all", "orders", "#")
    headers = {"attempt": 1, "source": "shop", "route": {"hops": ["a", "b"], "ttl": 3},
               "flags": [True, 2, "x"]}
    props = pika.BasicProperties(content_type="application/json", delivery_mode=2,
                                 headers=headers,
                                 correlation_id="c-7", message_id="m-7", app_id="pika-test")
    ch.basic_publish("orders", "eu.fr", b'{"n": 1}', properties=props)
    ch.basic_publish("orders", "us.ny", b'{"n": 2}', properties=props)
    (m, p, body), = drain(conn, ch, "eu", 1)
    expect(body == b'{"n": 1}', f"eu got {body!r}")
    expect(m.routing_key == "eu.fr" and m.exchange == "orders", "deliver carries exchange and key")
    expect(p.content_type == "application/json" and p.delivery_mode == 2, f"properties {p}")
    expect(p.headers == headers, f"headers, nested tables and arrays too: {p.headers}")
    expect(p.correlation_id == "c-7" and p.message_id == "m-7" and p.app_id == "pika-test",
           "string properties survive")
    bodies = sorted(b for _, _, b in drain(conn, ch, "all", 2))
    expect(bodies == [b'{"n": 1}', b'{"n": 2}'], f"all got {bodies}")
    ch.queue_unbind("eu", "orders", "eu.*")
    ch.basic_publish("orders", "eu.de", b"late")
    expect(ch.queue_declare("eu", passive=True).method.message_count == 0, "unbound queue empty")
    conn.close()


def nack_and_requeue():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("work")
    for body in (b"a", b"b"):
        ch.basic_publish("", "work", body)
    m, _, body = ch.basic_get("work")
    expect(body == b"a" and not m.redelivered, "first get")
    ch.basic_nack(m.delivery_tag, requeue=True)
    m, _, body = ch.basic_get("work")
    expect(body == b"a" and m.redelivered, "nacked with requeue comes back first, redelivered")
    ch.basic_reject(m.delivery_tag, requeue=False)
    m, _, body = ch.basic_get("work")
    expect(body == b"b", "rejected without requeue is gone")
    ch.basic_ack(m.delivery_tag)
    m, _, _ = ch.basic_get("work")
    expect(m is None, "queue empty after ack")
    conn.close()


def confirms_and_returns():
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare("confirmed", durable=True)
    for i in range(50):
        ch.basic_publish("", "confirmed", b"x%d" % i,
                         properties=pika.BasicProperties(delivery_mode=2))
    expect(ch.queue_declare("confirmed", passive=True).method.message_count == 50, "50 confirmed")
    try:
        ch.basic_publish("", "no-such-queue", b"lost", mandatory=True)
        expect(False, "a mandatory unroutable publish must come back")
    except pika.exceptions.UnroutableError as e:
        expect(len(e.messages) == 1 and e.messages[0].body == b"lost", "returned message body")
    ch.basic_publish("", "no-such-queue", b"dropped")  # not mandatory: confirmed, dropped
    conn.close()


def get_and_get_empty():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("g")
    m, _, _ = ch.basic_get("g")
    expect(m is None, "get-empty on an empty queue")
    ch.basic_publish("", "g", b"one")
    ch.basic_publish("", "g", b"two")
    m, _, body = ch.basic_get("g", auto_ack=True)
    expect(body == b"one" and m.message_count == 1, f"get-ok with message_count {m.message_count}")
    conn.close()


def prefetch_bounds_deliveries():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("pf")
    for i in range(10):
        ch.basic_publish("", "pf", b"%d" % i)
    ch.basic_qos(prefetch_count=3)
    got = []
    ch.basic_consume("pf", lambda c, m, p, b: got.append(m.delivery_tag))
    deadline = time.time() + PATIENCE
    while len(got) < 3 and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    other = connect().channel()
    # Three are out and unacked; the broker has no credit to send a fourth.
    expect(other.queue_declare("pf", passive=True).method.message_count == 7,
           "7 ready while 3 are unacked")
    ch.basic_ack(got[-1], multiple=True)
    while len(got) < 6 and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    expect(len(got) == 6, f"three more after acking, got {len(got)}")
    conn.close()


def killed_consumer_returns_its_messages():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("held")
    for i in range(5):
        ch.basic_publish("", "held", b"%d" % i)
    child = subprocess.Popen([sys.executable, __file__, str(PORT), "hold_without_acking"],
                             stdout=subprocess.PIPE)
    line = child.stdout.readline()
    expect(line.strip() == b"holding 5", f"child said {line!r}")
    expect(ch.queue_declare("held", passive=True).method.message_count == 0, "all 5 held")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.time() + PATIENCE
    while ch.queue_declare("held", passive=True).method.message_count < 5:
        expect(time.time() < deadline, "messages of a killed consumer come back")
        time.sleep(0.05)
    got = drain(conn, ch, "held", 5)
    expect(all(m.redelivered for m, _, _ in got), "they come back marked redelivered")
    expect(sorted(b for _, _, b in got) == [b"0", b"1", b"2", b"3", b"4"], "all five")
    conn.close()


def hold_without_acking():
    conn = connect()
    ch = conn.channel()
    got = []
    ch.basic_consume("held", lambda c, m, p, b: got.append(b))
    while len(got) < 5:
        conn.process_data_events(time_limit=0.1)
    print("holding", len(got), flush=True)
    while True:
        conn.process_data_events(time_limit=1)


def passive_declares_of_missing_things():
    conn = connect()
    for declare in (lambda ch: ch.queue_declare("missing-q", passive=True),
                    lambda ch: ch.exchange_declare("missing-x", passive=True)):
        ch = conn.channel()
        try:
            declare(ch)
            expect(False, "a passive declare of a missing thing must fail")
        except pika.exceptions.ChannelClosedByBroker as e:
            expect(e.reply_code == 404, f"404 NOT_FOUND, got {e.reply_code} {e.reply_text}")
    expect(conn.is_open, "only the channel closes, not the connection")
    conn.channel().queue_declare("still-works")
    conn.close()


def deleting_a_queue_cancels_its_consumers():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("doomed")
    cancelled = []
    ch.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    tag = ch.basic_consume("doomed", lambda *a: None)
    connect().channel().queue_delete("doomed")
    deadline = time.time() + PATIENCE
    while not cancelled and time.time() < deadline:
        conn.process_data_events(time_limit=0.1)
    expect(cancelled == [tag], f"server-sent basic.cancel for {tag}, got {cancelled}")
    conn.close()


def channel_errors_and_unsupported_things():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("redecl", durable=True)
    try:
        ch.queue_declare("redecl", durable=False)
        expect(False, "redeclaring with other properties fails")
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == 406, f"406 PRECONDITION_FAILED, got {e.reply_code}")
    ch = conn.channel()
    try:
        ch.basic_qos(prefetch_size=4096)
        expect(False, "a prefetch size is refused")
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == 540, f"540 NOT_IMPLEMENTED, got {e.reply_code}")
    ch = conn.channel()
    try:
        ch.basic_ack(12345)
        ch.queue_declare("after-bad-ack")
        expect(False, "acking an unknown tag closes the channel")
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == 406, f"406 for an unknown delivery tag, got {e.reply_code}")
    expect(conn.is_open, "the connection survives channel errors")
    conn.close()


def bad_credentials_and_vhosts():
    try:
        connect(credentials=pika.PlainCredentials("guest", "wrong"))
        expect(False, "a wrong password is refused")
    except pika.exceptions.ProbableAuthenticationError:
        pass
    except pika.exceptions.AMQPConnectionError as e:
        expect("403" in str(e) or "ACCESS_REFUSED" in str(e), f"refused with 403: {e!r}")
    try:
        connect(virtual_host="no-such-vhost")
        expect(False, "an unknown vhost is refused")
    except pika.exceptions.AMQPConnectionError as e:
        expect("530" in str(e) or "NOT_ALLOWED" in str(e), f"530 NOT_ALLOWED: {e!r}")


if __name__ == "__main__":
    globals()[SCENARIO]()
    print("ok", SCENARIO, file=sys.stderr)
