#!/usr/bin/python3
"""RabbitMQ features that clients rely on, run with pika (Debian's python3-pika):

    pika_features.py PORT SCENARIO

transactions, exchange-to-exchange bindings, alternate exchanges, priority queues, length limits
in bytes, reject-publish-dlx, single active consumer, consumer priorities, the consumer
timeout and stream queues (x-queue-type=stream, x-stream-offset, Warren's x-stream-group). Each scenario asserts what RabbitMQ 3.10 does and exits non-zero on the first mismatch.
"""
import sys
import time

import pika

PORT = int(sys.argv[1])
SCENARIO = sys.argv[2]
PATIENCE = 30  # seconds: a guard against hanging, never a speed expectation


def connect():
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", PORT))


def expect(cond, what):
    if not cond:
        print("FAILED:", what, file=sys.stderr)
        sys.exit(1)


def ready(ch, queue):
    return ch.queue_declare(queue, passive=True).method.message_count


def bodies(ch, queue):
    """Takes every ready message of `queue` with basic.get (acked) and returns the bodies."""
    out = []
    while True:
        method, _, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append(body.decode())


def expect_closed_with(code, action, what):
    try:
        action()
        expect(False, what + ": expected a channel error " + str(code))
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == code, f"{what}: {code} expected, got {e.reply_code} {e.reply_text}")


# --- transactions -----------------------------------------------------------------------------

def transactions_publish_at_commit():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("txq", durable=True)
    ch.tx_select()
    for i in range(3):
        ch.basic_publish("", "txq", f"m{i}".encode(),
                         pika.BasicProperties(delivery_mode=2))
    other = conn.channel()
    expect(ready(other, "txq") == 0, "nothing is published before the commit")
    ch.tx_rollback()
    expect(ready(other, "txq") == 0, "a rollback publishes nothing")
    ch.basic_publish("", "txq", b"a")
    ch.basic_publish("", "txq", b"b")
    ch.tx_commit()
    expect(ready(other, "txq") == 2, "a commit publishes what came after the rollback")
    expect(bodies(other, "txq") == ["a", "b"], "in order")
    conn.close()


def transactions_ack_at_commit():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("txa")
    for b in ("one", "two"):
        ch.basic_publish("", "txa", b.encode())
    ch.tx_select()
    first, _, _ = ch.basic_get("txa")
    second, _, _ = ch.basic_get("txa")
    ch.basic_ack(first.delivery_tag)
    ch.tx_rollback()
    # The rolled-back ack never happened: acking again and committing settles it.
    ch.basic_ack(first.delivery_tag)
    ch.tx_commit()
    ch.close()  # "two" was never acked: it goes back to the queue
    other = conn.channel()
    expect(bodies(other, "txa") == ["two"], "only the committed ack took effect")
    conn.close()


def transactions_returns_and_mode_errors():
    conn = connect()
    ch = conn.channel()
    returned = []
    ch.add_on_return_callback(lambda c, method, props, body: returned.append(body))
    ch.tx_select()
    ch.basic_publish("", "no-such-queue", b"lost", mandatory=True)
    ch.tx_commit()
    conn.process_data_events(time_limit=0)
    expect(returned == [b"lost"], f"an unroutable mandatory message comes back: {returned}")
    expect_closed_with(406, ch.confirm_delivery, "confirm.select on a transactional channel")
    ch = conn.channel()
    ch.confirm_delivery()
    expect_closed_with(406, ch.tx_select, "tx.select on a channel in confirm mode")
    ch = conn.channel()
    expect_closed_with(406, ch.tx_commit, "tx.commit without tx.select")
    conn.close()


def transactions_refused_publish_fails_the_commit():
    """A commit with a publish a queue refused is not commit-ok: RabbitMQ closes the channel with
    406 PRECONDITION_FAILED - partial tx completion."""
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("txfull", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    ch.tx_select()
    ch.basic_publish("", "txfull", b"first")
    ch.basic_publish("", "txfull", b"second")
    try:
        ch.tx_commit()
        expect(False, "commit-ok for a transaction a queue refused part of")
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == 406 and "partial tx completion" in e.reply_text,
               f"406 partial tx completion expected, got {e.reply_code} {e.reply_text}")
    other = conn.channel()
    expect(bodies(other, "txfull") == ["first"], "what the queue took stays taken")
    # A whole transaction the queue takes still commits.
    ch = conn.channel()
    ch.tx_select()
    ch.basic_publish("", "txfull", b"again")
    ch.tx_commit()
    expect(ready(other, "txfull") == 1, "a later commit of what fits")
    # Uncommitted publishes are bounded (64 MiB): beyond, the channel closes saying so.
    ch = conn.channel()
    ch.queue_declare("txbig")
    ch.tx_select()
    try:
        for _ in range(65):
            ch.basic_publish("", "txbig", b"x" * (1 << 20))
        ch.tx_commit()
        expect(False, "a transaction of 65 MiB was held")
    except pika.exceptions.ChannelClosedByBroker as e:
        expect(e.reply_code == 406 and "commit sooner" in e.reply_text,
               f"406 for an oversized transaction, got {e.reply_code} {e.reply_text}")
    expect(ready(other, "txbig") == 0, "nothing of it was published")
    conn.close()


def transactions_count_in_the_memory_ledger():
    """What an open transaction holds is counted with what queues hold (the memory alarm judges
    that count), and leaves the count at rollback. argv[3]: the node's HTTP port."""
    import base64
    import json
    import urllib.request

    def held():
        req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[3]}/api/overview")
        req.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
        with urllib.request.urlopen(req, timeout=PATIENCE) as r:
            return json.load(r)["message_memory"]

    conn = connect()
    ch = conn.channel()
    ch.queue_declare("txheld")
    before = held()
    ch.tx_select()
    for _ in range(16):
        ch.basic_publish("", "txheld", b"x" * (1 << 20))
    ready(ch, "txheld")  # a round trip: the node has read every publish before it answers
    during = held()
    expect(during >= before + (16 << 20), f"16 MiB uncommitted, counted {during - before} bytes")
    ch.tx_rollback()
    after = held()
    expect(after < before + (1 << 20), f"after the rollback {after - before} bytes still counted")
    expect(ready(ch, "txheld") == 0, "nothing was published")
    conn.close()


def requeue_keeps_original_order():
    """Messages rejected or nacked with requeue one at a time go back to where they were, as
    RabbitMQ puts them: m1, m2, m3 rejected in that order come back m1, m2, m3 (not m3, m2, m1),
    in a plain queue and within each priority of a priority queue."""
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("reorder")
    for i in range(1, 6):
        ch.basic_publish("", "reorder", f"m{i}".encode())
    tags = [ch.basic_get("reorder", auto_ack=False)[0].delivery_tag for _ in range(3)]
    ch.basic_reject(tags[0], requeue=True)
    ch.basic_nack(tags[1], multiple=False, requeue=True)
    ch.basic_reject(tags[2], requeue=True)
    got = bodies(ch, "reorder")
    expect(got == ["m1", "m2", "m3", "m4", "m5"], f"plain queue came back as {got}")

    ch.queue_declare("reorder-p", arguments={"x-max-priority": 5})
    for body, priority in [("low1", 0), ("low2", 0), ("high1", 5), ("low3", 0), ("high2", 5)]:
        ch.basic_publish("", "reorder-p", body.encode(),
                         pika.BasicProperties(priority=priority))
    handed = [ch.basic_get("reorder-p", auto_ack=False)[0] for _ in range(4)]  # high1 high2 low1 low2
    for method in [handed[3], handed[0], handed[2], handed[1]]:
        ch.basic_reject(method.delivery_tag, requeue=True)
    got = bodies(ch, "reorder-p")
    expect(got == ["high1", "high2", "low1", "low2", "low3"], f"priority queue came back as {got}")
    conn.close()


def properties_kept_as_published():
    """Deliveries carry the properties their publisher set, no more and no fewer, as RabbitMQ
    hands them back: no delivery mode added to a message that had none, and a property set to
    its default value (delivery mode 1, priority 0, timestamp 0, empty text) kept."""
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("props", durable=True)
    ch.basic_publish("", "props", b"bare")
    ch.basic_publish("", "props", b"defaults", pika.BasicProperties(
        delivery_mode=1, priority=0, timestamp=0, content_type="", headers={}))
    ch.basic_publish("", "props", b"persistent", pika.BasicProperties(delivery_mode=2))
    got = {}
    for _ in range(3):
        method, props, body = ch.basic_get("props", auto_ack=True)
        expect(method is not None, "three messages in props")
        got[body.decode()] = props
    bare, defaults, persistent = got["bare"], got["defaults"], got["persistent"]
    expect(bare.delivery_mode is None, f"no delivery mode was published, got {bare.delivery_mode}")
    expect(bare.priority is None and bare.timestamp is None and bare.content_type is None,
           "a bare message gets no properties")
    expect(defaults.delivery_mode == 1, f"delivery mode 1 kept, got {defaults.delivery_mode}")
    expect(defaults.priority == 0, f"priority 0 kept, got {defaults.priority}")
    expect(defaults.timestamp == 0, f"timestamp 0 kept, got {defaults.timestamp}")
    expect(defaults.content_type == "", f"empty content type kept, got {defaults.content_type!r}")
    expect(defaults.headers == {}, f"empty headers kept, got {defaults.headers!r}")
    expect(defaults.message_id is None, f"message id not added, got {defaults.message_id!r}")
    expect(persistent.delivery_mode == 2 and persistent.priority is None,
           f"persistent: {persistent.delivery_mode} {persistent.priority}")
    conn.close()


# --- exchange-to-exchange bindings and alternate exchanges ------------------------------------

def exchange_to_exchange_bindings():
    conn = connect()
    ch = conn.channel()
    ch.exchange_declare("src", exchange_type="direct")
    ch.exchange_declare("mid", exchange_type="fanout")
    ch.exchange_declare("top", exchange_type="topic")
    ch.queue_declare("e2e")
    ch.exchange_bind(destination="mid", source="src", routing_key="k")
    ch.exchange_bind(destination="top", source="src", routing_key="k")
    ch.queue_bind("e2e", "mid")
    ch.queue_bind("e2e", "top", "#")
    # A cycle: mid routes back to src. Each queue still gets a message once.
    ch.exchange_bind(destination="src", source="mid")
    ch.confirm_delivery()
    ch.basic_publish("src", "k", b"through")
    ch.basic_publish("src", "other", b"not-routed")
    expect(bodies(ch, "e2e") == ["through"], "routed through two paths, delivered once")
    try:
        ch.basic_publish("src", "other", b"x", mandatory=True)
        expect(False, "an unroutable mandatory message is returned")
    except pika.exceptions.UnroutableError:
        pass
    ch.exchange_unbind(destination="mid", source="src", routing_key="k")
    ch.exchange_unbind(destination="top", source="src", routing_key="k")
    ch.basic_publish("src", "k", b"after-unbind")
    expect(ready(ch, "e2e") == 0, "unbound: nothing arrives")
    expect_closed_with(404, lambda: ch.exchange_bind(destination="missing", source="src"),
                       "binding to a missing exchange")
    conn.close()


def e2e_setup_durable():
    conn = connect()
    ch = conn.channel()
    ch.exchange_declare("d-src", exchange_type="topic", durable=True)
    ch.exchange_declare("d-dst", exchange_type="fanout", durable=True)
    ch.exchange_declare("d-main", exchange_type="direct", durable=True,
                        arguments={"alternate-exchange": "d-dst"})
    ch.queue_declare("d-q", durable=True)
    ch.exchange_bind(destination="d-dst", source="d-src", routing_key="a.#")
    ch.queue_bind("d-q", "d-dst")
    ch.queue_declare("d-props", durable=True)
    ch.confirm_delivery()
    ch.basic_publish("", "d-props", b"stored", pika.BasicProperties(
        delivery_mode=2, priority=0, timestamp=0, type=""))
    conn.close()


def e2e_check_durable():
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.basic_publish("d-src", "a.b", b"kept-binding")
    ch.basic_publish("d-main", "nowhere", b"kept-alternate")
    expect(bodies(ch, "d-q") == ["kept-binding", "kept-alternate"],
           "a durable exchange binding and an alternate exchange survive a restart")
    method, props, _ = ch.basic_get("d-props", auto_ack=True)
    expect(method is not None, "the persistent message survived the restart")
    expect(props.delivery_mode == 2 and props.priority == 0 and props.timestamp == 0 and
           props.type == "" and props.content_type is None,
           f"stored properties came back as published: {props}")
    conn.close()


def alternate_exchange():
    conn = connect()
    ch = conn.channel()
    ch.exchange_declare("ae", exchange_type="fanout")
    ch.queue_declare("unrouted")
    ch.queue_bind("unrouted", "ae")
    ch.exchange_declare("main", exchange_type="direct", arguments={"alternate-exchange": "ae"})
    ch.queue_declare("routed")
    ch.queue_bind("routed", "main", "a")
    ch.exchange_declare("lost", exchange_type="direct",
                        arguments={"alternate-exchange": "not-declared"})
    ch.confirm_delivery()
    ch.basic_publish("main", "a", b"to-routed", mandatory=True)
    ch.basic_publish("main", "b", b"to-ae", mandatory=True)  # not returned: the AE took it
    expect(bodies(ch, "routed") == ["to-routed"], "a routable message ignores the AE")
    expect(bodies(ch, "unrouted") == ["to-ae"], "an unroutable one goes to the AE")
    try:
        ch.basic_publish("lost", "b", b"x", mandatory=True)
        expect(False, "a missing alternate exchange routes nowhere: returned")
    except pika.exceptions.UnroutableError:
        pass
    conn.close()


# --- queue features -----------------------------------------------------------------------------

def priority_queue():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("pq", arguments={"x-max-priority": 10})
    for body, prio in (("p1", 1), ("none", None), ("p5a", 5), ("p9", 9), ("p5b", 5),
                       ("p200", 200)):
        ch.basic_publish("", "pq", body.encode(), pika.BasicProperties(priority=prio))
    # 200 counts as the queue's maximum, 10; no priority counts as 0.
    got = bodies(ch, "pq")
    expect(got == ["p9", "p200", "p5a", "p5b", "p1", "none"] or
           got == ["p200", "p9", "p5a", "p5b", "p1", "none"], f"priority order: {got}")
    for bad in (0, 256, -1, "ten"):
        c = conn.channel()
        expect_closed_with(406, lambda: c.queue_declare("pq-bad", arguments={"x-max-priority": bad}),
                           f"x-max-priority {bad!r}")
    conn.close()


def priority_queue_requeue_keeps_order():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("pqr", arguments={"x-max-priority": 5})
    for body, prio in (("low", 1), ("high", 5), ("mid", 3)):
        ch.basic_publish("", "pqr", body.encode(), pika.BasicProperties(priority=prio))
    got = [ch.basic_get("pqr")[0] for _ in range(3)]
    ch.basic_nack(got[-1].delivery_tag, multiple=True, requeue=True)
    expect(bodies(ch, "pqr") == ["high", "mid", "low"], "requeued messages keep priority order")
    conn.close()


def max_length_bytes():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("mlb", arguments={"x-max-length-bytes": 10})
    for b in ("aaaa", "bbbb", "cccc", "dddd"):
        ch.basic_publish("", "mlb", b.encode())
    expect(bodies(ch, "mlb") == ["cccc", "dddd"], "drop-head keeps the newest 8 of 10 bytes")
    ch.queue_declare("mlb-reject", arguments={"x-max-length-bytes": 6,
                                              "x-overflow": "reject-publish"})
    ch.confirm_delivery()
    ch.basic_publish("", "mlb-reject", b"12345")
    try:
        ch.basic_publish("", "mlb-reject", b"67")
        expect(False, "a publish past x-max-length-bytes is nacked under reject-publish")
    except pika.exceptions.NackError:
        pass
    expect(bodies(ch, "mlb-reject") == ["12345"], "the queue kept what fit")
    c = conn.channel()
    expect_closed_with(406, lambda: c.queue_declare("mlb-bad", arguments={"x-max-length-bytes": -1}),
                       "a negative x-max-length-bytes")
    conn.close()


def reject_publish_dlx():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("full-dlq")
    ch.queue_declare("full", arguments={"x-max-length": 1, "x-overflow": "reject-publish-dlx",
                                        "x-dead-letter-exchange": "",
                                        "x-dead-letter-routing-key": "full-dlq"})
    ch.confirm_delivery()
    ch.basic_publish("", "full", b"kept")
    try:
        ch.basic_publish("", "full", b"refused")
        expect(False, "the publish past the limit is nacked")
    except pika.exceptions.NackError:
        pass
    expect(bodies(ch, "full") == ["kept"], "the queue kept the first")
    method, props, body = ch.basic_get("full-dlq", auto_ack=True)
    expect(body == b"refused", f"the refused message was dead-lettered: {body!r}")
    death = props.headers["x-death"][0]
    expect(death["reason"] == "maxlen" and death["queue"] == "full", f"x-death: {death}")
    conn.close()


def consume_into(conn, ch, queue, got, name, **kw):
    def on_message(c, method, props, body):
        got.append((name, body.decode()))
    return ch.basic_consume(queue, on_message, **kw)


def wait_for(conn, cond, what):
    deadline = time.time() + PATIENCE
    while not cond() and time.time() < deadline:
        conn.process_data_events(time_limit=0.05)
    expect(cond(), what)


def single_active_consumer():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("sac", arguments={"x-single-active-consumer": True})
    got = []
    first = conn.channel()
    second = conn.channel()
    tag = consume_into(conn, first, "sac", got, "first", auto_ack=True)
    consume_into(conn, second, "sac", got, "second", auto_ack=True)
    for i in range(4):
        ch.basic_publish("", "sac", f"m{i}".encode())
    wait_for(conn, lambda: len(got) == 4, f"4 deliveries: {got}")
    expect({n for n, _ in got} == {"first"}, f"only the first consumer is active: {got}")
    first.basic_cancel(tag)
    for i in range(4, 6):
        ch.basic_publish("", "sac", f"m{i}".encode())
    wait_for(conn, lambda: len(got) == 6, f"6 deliveries: {got}")
    expect([n for n, _ in got[4:]] == ["second", "second"], f"then the second takes over: {got}")
    c = conn.channel()
    expect_closed_with(406, lambda: c.queue_declare(
        "sac-bad", arguments={"x-single-active-consumer": "yes"}), "a non-boolean value")
    conn.close()


def consumer_priorities():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("cprio")
    got = []
    low = conn.channel()
    high = conn.channel()
    high.basic_qos(prefetch_count=2)
    consume_into(conn, low, "cprio", got, "low", auto_ack=True)
    consume_into(conn, high, "cprio", got, "high", arguments={"x-priority": 10})
    for i in range(5):
        ch.basic_publish("", "cprio", f"m{i}".encode())
    wait_for(conn, lambda: len(got) == 5, f"5 deliveries: {got}")
    names = [n for n, _ in got]
    expect(names.count("high") == 2 and names.count("low") == 3,
           f"the high-priority consumer takes what its prefetch allows, the rest go low: {got}")
    c = conn.channel()
    expect_closed_with(406, lambda: c.basic_consume("cprio", lambda *a: None,
                                                    arguments={"x-priority": "high"}),
                       "a non-integer x-priority")
    conn.close()


def consumer_timeout():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("slow")
    ch.basic_publish("", "slow", b"held")
    closed = []
    # BlockingChannel has no close callback of its own; its underlying channel does.
    ch._impl.add_on_close_callback(lambda c, reason: closed.append(reason))
    got = []
    consume_into(conn, ch, "slow", got, "c")
    wait_for(conn, lambda: closed, "the channel is closed when a delivery stays unacked too long")
    reason = closed[0]
    expect(isinstance(reason, pika.exceptions.ChannelClosedByBroker) and reason.reply_code == 406,
           f"406 PRECONDITION_FAILED: {reason!r}")
    expect(got == [("c", "held")], f"the message was delivered first: {got}")
    other = conn.channel()
    expect(bodies(other, "slow") == ["held"], "and went back to the queue")
    expect(conn.is_open, "the connection stays open")
    conn.close()


# --- streams ----------------------------------------------------------------------------------

def stream_offsets(ch, conn, queue, count, offset=None, group=None):
    """Consumes `count` messages of a stream from `offset`, acking each; (offset, body) pairs."""
    got = []
    args = {}
    if offset is not None:
        args["x-stream-offset"] = offset
    if group is not None:
        args["x-stream-group"] = group

    def on_message(c, method, props, body):
        got.append((props.headers["x-stream-offset"], body.decode()))
        c.basic_ack(method.delivery_tag)
    tag = ch.basic_consume(queue, on_message, arguments=args)
    wait_for(conn, lambda: len(got) >= count, f"{count} deliveries from {offset}: {got}")
    ch.basic_cancel(tag)
    return got


def streams_over_amqp():
    conn = connect()
    ch = conn.channel()
    ch.queue_declare("events", durable=True, arguments={"x-queue-type": "stream"})
    ch.confirm_delivery()
    for i in range(6):
        ch.basic_publish("", "events", f"e{i}".encode(),
                         pika.BasicProperties(delivery_mode=2))
    ch.basic_qos(prefetch_count=10)
    got = stream_offsets(ch, conn, "events", 6, "first")
    expect(got == [(i, f"e{i}") for i in range(6)], f"from first, with offsets: {got}")
    got = stream_offsets(ch, conn, "events", 2, 4)
    expect(got == [(4, "e4"), (5, "e5")], f"from offset 4: {got}")
    got = stream_offsets(ch, conn, "events", 6, "1h")
    expect([o for o, _ in got] == list(range(6)), f"from an hour ago: {got}")
    got = stream_offsets(ch, conn, "events", 6, "first", group="billing")
    expect([o for o, _ in got] == list(range(6)), f"a group reads from first: {got}")
    expect(ready(ch, "events") == 6, "consuming a stream removes nothing")
    c = conn.channel()
    expect_closed_with(406, lambda: c.basic_consume("events", lambda *a: None),
                       "a stream consumer without a prefetch count")
    c = conn.channel()
    c.basic_qos(prefetch_count=5)
    expect_closed_with(406, lambda: c.basic_consume("events", lambda *a: None, auto_ack=True),
                       "a stream consumer with automatic acks")
    c = conn.channel()
    c.basic_qos(prefetch_count=5)
    expect_closed_with(406, lambda: c.basic_consume("events", lambda *a: None,
                                                    arguments={"x-stream-offset": "middle"}),
                       "an unknown offset spec")
    c = conn.channel()
    expect_closed_with(406, lambda: c.queue_declare("loose", arguments={"x-queue-type": "stream"}),
                       "a stream that is not durable")
    c = conn.channel()
    expect_closed_with(406, lambda: c.basic_get("events"), "basic.get on a stream")
    conn.close()


if __name__ == "__main__":
    globals()[SCENARIO]()
    print("ok", SCENARIO, file=sys.stderr)
