#!/usr/bin/env python3
"""How long a new member takes to learn the queues of a cluster that holds many.

Starts node a (clustered), declares QUEUES durable queues on it over AMQP (pika, several
connections at once), then starts node b with --join a and measures from b's start until b's
management API counts every queue (`GET /api/overview`, object_totals.queues, polled; each poll
lists every queue, so the figure is good to about one poll's time, printed too). Queue records
do not go through the metadata log yet: this is what a new member's catch-up costs today (a's
placements sent at the join). Also prints a's declare rate and both nodes' RSS.

  /usr/bin/python3 bench/catch_up.py --build build --queues 100000
(Debian's python3, for python3-pika.)
"""
import argparse
import json
import tempfile
import threading
import time

import pika

from warren_cluster import Node, call, free_port


def declare(node, names):
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", node.amqp))
    ch = conn.channel()
    for name in names:
        ch.queue_declare(name, durable=True)
    conn.close()


def queues_seen_by(node):
    t0 = time.monotonic()
    status, body = call(node.http, "GET", "/api/overview", timeout=300)
    took = time.monotonic() - t0
    if status != 200:
        return 0, took
    return json.loads(body)["object_totals"]["queues"], took


def rss_mb(node):
    with open(f"/proc/{node.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--queues", type=int, default=100000)
    parser.add_argument("--clients", type=int, default=4)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="warren-catchup-") as work:
        pa = free_port()
        a = Node(opts.build, work, "a", pa, None)
        b = Node(opts.build, work, "b", free_port(), f"127.0.0.1:{pa}")
        try:
            a.start()
            names = [f"cq{i}" for i in range(opts.queues)]
            t0 = time.monotonic()
            threads = [threading.Thread(target=declare, args=(a, names[c::opts.clients]))
                       for c in range(opts.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            took = time.monotonic() - t0
            print(f"a: {opts.queues} durable queues declared in {took:.1f} s "
                  f"({opts.queues / took:.0f}/s, {opts.clients} AMQP clients); "
                  f"a's RSS {rss_mb(a):.0f} MB", flush=True)
            t0 = time.monotonic()
            b.start()
            started = time.monotonic() - t0
            polls = []
            while True:
                seen, poll = queues_seen_by(b)
                polls.append(poll)
                if seen >= opts.queues:
                    break
                if time.monotonic() - t0 > 1800:
                    raise SystemExit(f"b saw {seen} queues after 30 minutes")
                time.sleep(0.2)
            caught_up = time.monotonic() - t0
            print(f"b: ready after {started:.1f} s; counted all {opts.queues} queues after "
                  f"{caught_up:.1f} s (last poll took {polls[-1]:.1f} s, {len(polls)} polls); "
                  f"b's RSS {rss_mb(b):.0f} MB")
        finally:
            for n in (a, b):
                if n.proc and n.proc.poll() is None:
                    n.kill()


if __name__ == "__main__":
    main()
