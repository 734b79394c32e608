#!/usr/bin/env python3
"""Vhost, user and permission changes through RabbitMQ's management API, timed.

Each client repeats rounds of: PUT a vhost, PUT a user, PUT the user's permissions in the vhost,
DELETE the user, DELETE the vhost; each waits for its answer (keep-alive, basic auth). Clients
run at once, spread over the given ports (one broker, or each member of a cluster). Prints one
line: the changes per second of all clients, then the p50 and p99 latency (ms) of each kind.

  metadata_http.py --ports 15672 --clients 4 --rounds 200 --prefix run1
"""
import argparse
import base64
import http.client
import json
import threading
import time
import urllib.parse

KINDS = ["add_vhost", "add_user", "set_permissions", "delete_user", "delete_vhost"]


def quoted(name):
    return urllib.parse.quote(name, safe="")


def client(port, name, rounds, user, password, samples, errors):
    auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(method, path, body=None):
        headers = {"Authorization": auth, "content-type": "application/json"}
        data = None if body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=headers)
        reply = conn.getresponse()
        reply.read()
        if reply.status >= 300:
            errors.append(f"{method} {path}: {reply.status}")

    for i in range(rounds):
        vhost, who = f"{name}-v{i}", f"{name}-u{i}"
        steps = [
            ("PUT", f"/api/vhosts/{quoted(vhost)}", {}),
            ("PUT", f"/api/users/{quoted(who)}", {"password": "pw", "tags": ""}),
            ("PUT", f"/api/permissions/{quoted(vhost)}/{quoted(who)}",
             {"configure": ".*", "write": ".*", "read": ".*"}),
            ("DELETE", f"/api/users/{quoted(who)}", None),
            ("DELETE", f"/api/vhosts/{quoted(vhost)}", None),
        ]
        for kind, (method, path, body) in zip(KINDS, steps):
            t0 = time.perf_counter()
            call(method, path, body)
            samples[kind].append(time.perf_counter() - t0)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100.0 * len(ordered)))] * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", required=True, help="comma-separated management ports")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--prefix", default="mh")
    ap.add_argument("--user", default="guest")
    ap.add_argument("--password", default="guest")
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(",")]
    samples = {k: [] for k in KINDS}
    errors = []
    threads = [threading.Thread(target=client, args=(ports[c % len(ports)], f"{a.prefix}-c{c}",
                                                     a.rounds, a.user, a.password, samples,
                                                     errors))
               for c in range(a.clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    total = sum(len(v) for v in samples.values())
    line = [f"ops_per_s={total / elapsed:.0f}"]
    for k in KINDS:
        line.append(f"{k}_p50={percentile(samples[k], 50):.2f} {k}_p99={percentile(samples[k], 99):.2f}")
    line.append(f"errors={len(errors)}")
    print(" ".join(line))
    for e in errors[:5]:
        print("error:", e)


if __name__ == "__main__":
    main()
