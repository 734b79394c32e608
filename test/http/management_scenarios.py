#!/usr/bin/env python3
"""The management door against a real node, as its users meet it: RabbitMQ's own rabbitmqadmin,
plain HTTP as scripts use it, and Prometheus' text parser (python3-prometheus-client).

usage: management_scenarios.py HTTP_PORT AMQP_PORT SCENARIO [METRICS_PORT]
Exits 0 when every check of the scenario held; otherwise prints what did not and exits 1.
"""
import base64
import socket
import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pika

HTTP_PORT, AMQP_PORT, SCENARIO = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
METRICS_PORT = int(sys.argv[4]) if len(sys.argv) > 4 else 0
BASE = f"http://127.0.0.1:{HTTP_PORT}"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what, flush=True)


def http(method, path, body=None, user="guest", password="guest"):
    """(status, parsed JSON or text) of one request."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, raw, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        status, raw, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
    text = raw.decode("utf-8", "replace")
    if "json" in ctype and text:
        return status, json.loads(text)
    return status, text


def admin(*args):
    """rabbitmqadmin against the node; (exit code, stdout, stderr)."""
    cmd = ["rabbitmqadmin", "-H", "127.0.0.1", "-P", str(HTTP_PORT), "-u", "guest", "-p", "guest"]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def amqp():
    params = pika.ConnectionParameters("127.0.0.1", AMQP_PORT,
                                       credentials=pika.PlainCredentials("guest", "guest"))
    return pika.BlockingConnection(params)


def q(name, vhost="/"):
    return f"/api/queues/{urllib.parse.quote(vhost, safe='')}/{urllib.parse.quote(name, safe='')}"


def rabbitmqadmin_commands():
    code, out, err = admin("declare", "queue", "name=orders", "durable=true")
    check(code == 0, f"declare queue exits 0 ({code}: {err})")
    code, out, err = admin("list", "queues")
    check(code == 0 and "orders" in out, f"list queues shows orders: {out} {err}")
    for i in range(3):
        code, out, err = admin("publish", "routing_key=orders", f"payload=order-{i}")
        check(code == 0, f"publish {i} exits 0 ({err})")
    code, out, err = admin("-f", "raw_json", "list", "queues")
    rows = json.loads(out) if code == 0 else []
    orders = [r for r in rows if r["name"] == "orders"]
    check(orders and orders[0]["messages"] == 3, f"orders holds 3 messages: {orders}")
    # get with the default ackmode requeues: the message stays and comes back redelivered
    code, out, err = admin("get", "queue=orders")
    check(code == 0 and "order-0" in out, f"get shows order-0: {out} {err}")
    code, out, err = admin("-f", "raw_json", "get", "queue=orders", "ackmode=ack_requeue_false",
                           "count=2")
    got = json.loads(out) if code == 0 else []
    check([m["payload"] for m in got] == ["order-0", "order-1"], f"get count=2 takes two: {got}")
    check(got and got[0]["redelivered"] is True, f"the requeued message is redelivered: {got}")
    status, body = http("GET", q("orders"))
    check(status == 200 and body["messages"] == 1, f"one left after ack_requeue_false: {body}")
    code, out, err = admin("export", "/dev/stdout")
    check(code == 0 and '"orders"' in out, f"export holds the queue: {out[:300]} {err}")
    defs = json.loads(out[: out.rindex("}") + 1]) if code == 0 else {}
    check(any(x["name"] == "guest" for x in defs.get("users", [])), "export holds the users")
    code, out, err = admin("declare", "exchange", "name=events", "type=topic")
    check(code == 0, f"declare exchange ({err})")
    code, out, err = admin("declare", "binding", "source=events", "destination=orders",
                           "routing_key=order.*")
    check(code == 0, f"declare binding ({err})")
    code, out, err = admin("list", "bindings")
    check("events" in out and "order.*" in out, f"list bindings shows it: {out}")
    status, body = http("GET", q("orders") + "/bindings")
    check(status == 200 and sorted(b["source"] for b in body) == ["", "events"],
          f"the queue's bindings (default exchange and events): {body}")
    status, body = http("DELETE", "/api/bindings/%2F/e/events/q/orders/order.*")
    check(status == 204, f"delete binding: {status} {body}")
    status, body = http("GET", q("orders") + "/bindings")
    check([b["source"] for b in body] == [""], f"only the default binding left: {body}")
    http("POST", "/api/bindings/%2F/e/events/q/orders", {"routing_key": "order.*"})
    code, out, err = admin("publish", "exchange=events", "routing_key=order.new", "payload=x")
    check(code == 0, f"publish through the topic exchange ({err})")
    code, out, err = admin("purge", "queue", "name=orders")
    check(code == 0, f"purge ({err})")
    status, body = http("GET", q("orders"))
    check(body.get("messages") == 0, f"purged: {body}")
    code, out, err = admin("delete", "queue", "name=orders")
    check(code == 0, f"delete queue ({err})")
    status, body = http("GET", q("orders"))
    check(status == 404, f"deleted queue is 404: {status} {body}")


def errors_as_rabbitmq_writes_them():
    status, body = http("GET", "/api/overview", user=None)
    check(status == 401 and body.get("error") == "not_authorised", f"no auth: {status} {body}")
    status, body = http("GET", "/api/overview", password="wrong")
    check(status == 401 and body.get("error") == "not_authorised", f"bad password: {status} {body}")
    status, body = http("GET", q("missing"))
    check(status == 404 and body.get("error") == "Object Not Found", f"missing: {status} {body}")
    status, body = http("PUT", q("dur"), {"durable": True})
    check(status == 201, f"declare: {status} {body}")
    status, body = http("PUT", q("dur"), {"durable": False})
    check(status == 400 and body.get("error") == "bad_request" and "durable" in body["reason"],
          f"inequivalent declare: {status} {body}")
    status, body = http("PUT", q("bad"), {"arguments": {"x-max-length": "ten"}})
    check(status == 400 and "x-max-length" in body.get("reason", ""), f"bad argument: {body}")
    req = urllib.request.Request(BASE + q("x"), data=b"{nope", method="PUT")
    req.add_header("Authorization", "Basic " + base64.b64encode(b"guest:guest").decode())
    try:
        urllib.request.urlopen(req, timeout=30)
        check(False, "bad JSON refused")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        check(e.code == 400 and body["error"] == "bad_request", f"bad JSON: {e.code} {body}")
    status, body = http("PATCH", "/api/queues")
    check(status == 405, f"unknown method: {status}")
    big = {"durable": False, "arguments": {"pad": "x" * (2 << 20)}}
    try:
        status, body = http("PUT", q("q"), big)
        check(status == 413, f"a declare body over 1 MiB: {status}")
    except (ConnectionResetError, BrokenPipeError, urllib.error.URLError):
        # The door answered 413 and closed while the client was still sending the rest: the
        # client may see the reset before the answer. Either way nothing was published.
        pass
    status, body = http("GET", q("q"))
    check(status == 404, f"nothing was declared or published by it: {status}")
    status, body = http("GET", "/api/whoami")
    check(status == 200, "the door still answers after an oversized body")
    status, body = http("GET", "/api/no-such-thing")
    check(status == 404, f"unknown path: {status}")
    # a user without a management tag may not use the API, and may not list users
    http("PUT", "/api/users/worker", {"password": "pw", "tags": ""})
    http("PUT", "/api/permissions/%2F/worker", {"configure": ".*", "write": ".*", "read": ".*"})
    status, body = http("GET", "/api/overview", user="worker", password="pw")
    check(status == 401 and "management" in body.get("reason", ""), f"no tag: {status} {body}")
    http("PUT", "/api/users/watcher", {"password": "pw", "tags": "management"})
    status, body = http("GET", "/api/users", user="watcher", password="pw")
    check(status == 401, f"a management user cannot list users: {status} {body}")
    status, body = http("GET", "/api/queues", user="watcher", password="pw")
    check(status == 200 and body == [], f"a user without permissions sees no queues: {body}")


def peek_leaves_messages():
    conn = amqp()
    ch = conn.channel()
    ch.confirm_delivery()  # each publish returns once the queue has it
    ch.queue_declare("peeked")
    for i in range(5):
        ch.basic_publish("", "peeked", f"m{i}".encode(), pika.BasicProperties(headers={"n": i}))
    status, body = http("GET", q("peeked") + "/messages?from=1&count=3")
    check(status == 200 and [m["payload"] for m in body] == ["m1", "m2", "m3"],
          f"peek from=1 count=3: {body}")
    check(all(m["redelivered"] is False for m in body), "peek does not mark redelivered")
    check([m["position"] for m in body] == [1, 2, 3], "positions")
    check(body and body[0]["properties"]["headers"] == {"n": 1}, f"headers: {body[:1]}")
    status, body = http("GET", q("peeked"))
    check(body["messages_ready"] == 5, f"all five still ready: {body}")
    method, props, payload = ch.basic_get("peeked", auto_ack=True)
    check(payload == b"m0" and not method.redelivered, "a consumer still gets m0 first, fresh")
    status, body = http("GET", q("peeked") + "/messages?count=0")
    check(status == 400 and body.get("error") == "bad_request", f"count=0: {body}")
    status, body = http("GET", q("missing") + "/messages")
    check(status == 404, f"peek of a missing queue: {status}")
    conn.close()


def metrics_parse():
    from prometheus_client.parser import text_string_to_metric_families
    conn = amqp()
    ch = conn.channel()
    ch.queue_declare("metered", durable=True)
    ch.confirm_delivery()
    for i in range(7):
        ch.basic_publish("", "metered", b"x" * 10, pika.BasicProperties(delivery_mode=2))
    # On the management port, /metrics is behind the API's login; on its own port, open.
    status, text = http("GET", "/metrics", user=None)
    check(status == 401, f"/metrics on the management port without a login: {status}")
    status, text = http("GET", "/metrics")
    check(status == 200, f"/metrics on the management port, logged in: {status}")
    with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=30) as r:
        status, text = r.status, r.read().decode()
    check(status == 200, f"/metrics on the metrics port: {status}")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/api/overview", timeout=30)
        check(False, "the metrics port serves the API")
    except urllib.error.HTTPError as e:
        check(e.code == 404, f"the API on the metrics port: {e.code}")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    ready = [s for s in families["rabbitmq_queue_messages_ready"].samples
             if s.labels == {"vhost": "/", "queue": "metered"}]
    check(ready and ready[0].value == 7, f"ready gauge: {ready}")
    published = [s for s in families["rabbitmq_queue_messages_published"].samples
                 if s.labels.get("queue") == "metered"]
    check(published and published[0].value == 7, f"published counter: {published}")
    check(families["rabbitmq_connections"].samples[0].value >= 1, "connections gauge")
    check(families["rabbitmq_process_open_fds"].samples[0].value > 0, "open fds")
    hist = families["warren_publish_confirm_latency_seconds"]
    count = [s for s in hist.samples if s.name.endswith("_count")][0].value
    check(hist.type == "histogram" and count >= 7, f"confirm latency histogram counts 7: {count}")
    for name in ("rabbitmq_alarms_memory_used_watermark", "warren_uptime_seconds",
                 "rabbitmq_process_resident_memory_bytes", "rabbitmq_connection_channels"):
        check(name in families, f"{name} present")
    conn.close()


def rates_and_listings():
    conn = amqp()
    ch = conn.channel()
    ch.confirm_delivery()  # each publish returns once the queue has it
    ch.queue_declare("rated")
    http("GET", "/api/overview")  # a first reading: rates are measured against it
    time.sleep(1.1)
    for i in range(50):
        ch.basic_publish("", "rated", b"r")
    status, body = http("GET", q("rated"))
    stats = body.get("message_stats", {})
    check(stats.get("publish") == 50, f"publish count: {stats}")
    check(stats.get("publish_details", {}).get("rate", 0) > 0, f"publish rate > 0: {stats}")
    status, body = http("GET", "/api/overview")
    check(body["queue_totals"]["messages"] >= 50 and body["object_totals"]["connections"] >= 1,
          f"overview totals: {body}")
    check(len(body["rate_history"]) >= 1, "rate history kept")
    status, conns = http("GET", "/api/connections")
    check(len(conns) == 1 and conns[0]["user"] == "guest",
          f"only the client connection is listed (not the API's own sessions): {conns}")
    ch.basic_consume("rated", lambda *a: None)
    status, consumers = http("GET", "/api/consumers")
    check(len(consumers) == 1 and consumers[0]["queue"]["name"] == "rated", f"{consumers}")
    for path in ("/api/vhosts", "/api/nodes", "/api/exchanges", "/api/exchanges/%2F/amq.topic",
                 "/api/bindings/%2F", "/api/users", "/api/permissions", "/api/channels",
                 "/api/whoami", "/api/definitions"):
        status, body = http("GET", path)
        check(status == 200, f"GET {path}: {status} {str(body)[:200]}")
    status, body = http("PUT", "/api/vhosts/other")
    check(status in (201, 204), f"add vhost: {status} {body}")
    status, body = http("GET", "/api/vhosts/other")
    check(status == 200 and body["name"] == "other", f"the vhost: {body}")
    status, body = http("DELETE", "/api/vhosts/other")
    check(status == 204, f"delete vhost: {status} {body}")
    conn.close()


def raw_put(path, body_text):
    """(status, text) of a PUT whose body is given as text (too deep for json.dumps)."""
    req = urllib.request.Request(BASE + path, data=body_text.encode(), method="PUT")
    token = base64.b64encode(b"guest:guest").decode()
    req.add_header("Authorization", "Basic " + token)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def nested(levels):
    """A value with `levels` levels of arrays and tables below the arguments table."""
    v = 1
    for i in range(levels):
        v = [v] if i % 2 == 0 else {"t": v}
    return v


MAX_FIELD_DEPTH = 16


def nesting_is_capped_and_what_is_taken_is_stored():
    # 50,000 arrays deep: refused while parsing, and the node stays up.
    status, text = raw_put(q("hostile"), '{"durable":true,"arguments":{"x":' + "[" * 50000 +
                           "]" * 50000 + "}}")
    check(status == 400 and "nests deeper" in text, f"50,000 deep: {status} {text[:200]}")
    # One level beyond the cap: refused naming the limit, for arguments and for headers.
    status, body = http("PUT", q("too-deep"), {"durable": True,
                                               "arguments": {"x": nested(MAX_FIELD_DEPTH + 1)}})
    check(status == 400 and f"at most {MAX_FIELD_DEPTH}" in str(body), f"too deep: {status} {body}")
    # At the cap: taken, durable, listed, exported; and a message with headers that deep, too.
    status, body = http("PUT", q("deepest"), {"durable": True,
                                              "arguments": {"x": nested(MAX_FIELD_DEPTH)}})
    check(status in (201, 204), f"at the cap: {status} {body}")
    publish = {"properties": {"delivery_mode": 2, "headers": {"h": nested(MAX_FIELD_DEPTH)}},
               "routing_key": "deepest", "payload": "kept", "payload_encoding": "string"}
    status, body = http("POST", "/api/exchanges/%2F/amq.default/publish", publish)
    check(status == 200 and body.get("routed") is True, f"publish at the cap: {status} {body}")
    publish["properties"]["headers"] = {"h": nested(MAX_FIELD_DEPTH + 1)}
    status, body = http("POST", "/api/exchanges/%2F/amq.default/publish", publish)
    check(status == 400 and f"at most {MAX_FIELD_DEPTH}" in str(body),
          f"publish beyond the cap: {status} {body}")
    deepest_read_back()


def deepest_read_back():
    """The queue taken at the cap lists, exports and keeps its message (also after a restart)."""
    status, body = http("GET", q("deepest"))
    check(status == 200 and body["arguments"]["x"] == nested(MAX_FIELD_DEPTH),
          f"listed: {status} {str(body)[:300]}")
    status, body = http("GET", "/api/definitions")
    check(status == 200 and any(x["name"] == "deepest" for x in body["queues"]),
          f"exported: {status} {str(body)[:300]}")
    status, body = http("GET", q("deepest"))
    check(status == 200 and body.get("messages") == 1, f"its message: {str(body)[:300]}")


def raw_exchange(head, body=b"", wait=30):
    """Sends a request head (and `body`) on a socket of its own; the status line of the answer,
    or "" when none came within `wait` seconds."""
    with socket.create_connection(("127.0.0.1", HTTP_PORT), timeout=wait) as sock:
        sock.sendall(head.encode() + body)
        try:
            answer = sock.recv(4096).decode("latin-1")
        except socket.timeout:
            return ""
        return answer.split("\r\n", 1)[0]


def basic(user="guest", password="guest"):
    return "Authorization: Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def bodies_are_read_after_the_login_within_limits():
    # 60 MiB announced without a login: refused at once, before a byte of the body.
    head = ("PUT /api/queues/%2F/big HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 62914560\r\n\r\n")
    status = raw_exchange(head)
    check(status.startswith("HTTP/1.1 401"), f"unauthenticated 60 MiB: {status!r}")
    status = raw_exchange(head.replace("\r\n\r\n", "\r\n" + basic("guest", "wrong") + "\r\n\r\n"))
    check(status.startswith("HTTP/1.1 401"), f"wrong password, 60 MiB: {status!r}")
    # Logged in, over the route's limit: 413 with its reason, before the body.
    status = raw_exchange(head.replace("\r\n\r\n", "\r\n" + basic() + "\r\n\r\n"))
    check(status == "HTTP/1.1 413 Payload Too Large", f"logged in, 60 MiB: {status!r}")
    # A body that trickles: cut off with 408 after the node's --handshake-timeout.
    head = ("PUT /api/queues/%2F/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + basic() + "\r\nContent-Length: 100\r\n\r\n")
    status = raw_exchange(head, b'{"durable":', wait=60)
    check(status == "HTTP/1.1 408 Request Timeout", f"trickling body: {status!r}")
    # A publish may carry a message far larger than other routes' bodies.
    payload = "x" * (2 << 20)
    status, body = http("PUT", q("roomy"), {"durable": False})
    check(status in (201, 204), f"declare: {status} {body}")
    status, body = http("POST", "/api/exchanges/%2F/amq.default/publish",
                        {"properties": {}, "routing_key": "roomy", "payload": payload,
                         "payload_encoding": "string"})
    check(status == 200 and body.get("routed") is True, f"2 MiB publish: {status} {str(body)[:200]}")
    # The same 2 MiB is over a declare's limit (announced only: the answer comes before a body).
    status = raw_exchange("PUT /api/queues/%2F/roomy2 HTTP/1.1\r\nHost: x\r\n" + basic() +
                          "\r\nContent-Type: application/json\r\nContent-Length: " +
                          str(len(payload) + 40) + "\r\n\r\n")
    check(status == "HTTP/1.1 413 Payload Too Large", f"2 MiB declare: {status!r}")


SCENARIOS = {
    "bodies_are_read_after_the_login_within_limits": bodies_are_read_after_the_login_within_limits,
    "nesting_is_capped_and_what_is_taken_is_stored": nesting_is_capped_and_what_is_taken_is_stored,
    "deepest_read_back": deepest_read_back,
    "rabbitmqadmin_commands": rabbitmqadmin_commands,
    "errors_as_rabbitmq_writes_them": errors_as_rabbitmq_writes_them,
    "peek_leaves_messages": peek_leaves_messages,
    "metrics_parse": metrics_parse,
    "rates_and_listings": rates_and_listings,
}

SCENARIOS[SCENARIO]()
sys.exit(1 if failures else 0)
