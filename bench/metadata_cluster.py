#!/usr/bin/env python3
"""Exchange, queue and binding operations on a 3-node Warren cluster over AMQP 0-9-1:
bench/metadata_bench.c (exchange.declare, queue.declare, queue.bind, queue.unbind, queue.delete,
exchange.delete on durable names, each waiting for its answer) against a member that does not
lead the metadata log, from 1 client and from CLIENTS clients. With BASE=DIR, the same against a
cluster of DIR's warren-node, in the same run, for a before/after row pair. Prints one Markdown
row per build and client count: operations per second of all clients, and the p50 / p99 latency
of exchange.declare and exchange.delete, the operations that go through the log. With
EXCHANGE_BINDS=1, each round also binds its exchange to itself and unbinds it (eight operations),
and the rows give exchange.bind's p50 / p99 in place of exchange.delete's.

  BUILD=build BASE=/path/to/old/build ROUNDS=300 CLIENTS=4 python3 bench/metadata_cluster.py
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from warren_cluster import Node, free_port  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "300"))
CLIENTS = int(os.environ.get("CLIENTS", "4"))
EXCHANGE_BINDS = os.environ.get("EXCHANGE_BINDS") == "1"
LAST = "exchange.bind" if EXCHANGE_BINDS else "exchange.delete"


def build_bench(work):
    out = os.path.join(work, "metadata_bench")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metadata_bench.c")
    subprocess.run(["gcc", "-O2", "-Wall", "-o", out, source, "-lrabbitmq", "-lpthread"],
                   check=True)
    return out


def three_nodes(build, work):
    ports = [free_port() for _ in range(3)]
    a = Node(build, work, "a", ports[0], None)
    a.start()
    b = Node(build, work, "b", ports[1], f"127.0.0.1:{ports[0]}")
    b.start()
    c = Node(build, work, "c", ports[2], f"127.0.0.1:{ports[0]}")
    c.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = a.nodes()
        if len(rows) == 3 and all(r.get("running") for r in rows):
            leader = [r["name"] for r in rows if r.get("metadata_leader")]
            if leader or not any("metadata_leader" in r for r in rows):
                follower = next(n for n in (b, c, a) if [n.name] != leader)
                return [a, b, c], follower
        time.sleep(0.2)
    raise SystemExit("the cluster did not form")


def field(text, op, name):
    m = re.search(rf"^{re.escape(op)} .*?{name}=([0-9.]+)", text, re.M)
    return float(m.group(1)) if m else float("nan")


def run(bench, build, label):
    work = tempfile.mkdtemp(prefix="warren-metacluster-", dir="/var/tmp")
    nodes = []
    try:
        nodes, follower = three_nodes(build, work)
        time.sleep(2)  # the log's first entries settle
        for clients in (1, CLIENTS):
            out = subprocess.run([bench, "-p", str(follower.amqp), "-c", str(clients), "-r",
                                  str(ROUNDS), "-P", f"mc{clients}-{os.getpid()}"] +
                                 (["-x"] if EXCHANGE_BINDS else []),
                                 capture_output=True, text=True, timeout=900)
            text = out.stdout + out.stderr
            print(f"{label}, {clients} client(s): " + " ".join(text.split()), file=sys.stderr)
            ops = field(text, "all", "ops_per_s")
            print(f"| {label} | {clients} | {ops:,.0f} | "
                  f"{field(text, 'exchange.declare', 'p50_us') / 1000:.2f} / "
                  f"{field(text, 'exchange.declare', 'p99_us') / 1000:.2f} | "
                  f"{field(text, LAST, 'p50_us') / 1000:.2f} / "
                  f"{field(text, LAST, 'p99_us') / 1000:.2f} |", flush=True)
    finally:
        for n in nodes:
            n.kill()
        shutil.rmtree(work, ignore_errors=True)


def main():
    work = tempfile.mkdtemp(prefix="warren-metabench-")
    try:
        bench = build_bench(work)
        print(f"machine: {os.cpu_count()} cores; ROUNDS={ROUNDS}", file=sys.stderr)
        print(f"| build | clients | ops/s (all {'eight' if EXCHANGE_BINDS else 'six'}) "
              f"| exchange.declare p50 / p99 (ms) | {LAST} p50 / p99 (ms) |")
        print("|---|---:|---:|---:|---:|")
        if os.environ.get("BASE"):
            run(bench, os.environ["BASE"], "base")
        run(bench, os.environ.get("BUILD", "build"), "this build")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
