#!/usr/bin/env python3
"""How long a 3-node Warren cluster takes to serve metadata changes again after kill -9 of the
metadata log's leader.

Starts three warren-node processes on loopback (a founding, b and c joining), then, for each
round: finds the leader, kills it (SIGKILL) and measures from that moment
  - named: until a survivor names another member as the leader (`GET /api/nodes`, polled every
    10 ms);
  - change: until a change through a survivor is answered (a client on each survivor PUTs a new
    vhost, again and again, each waiting for its answer as a user's would);
then starts the killed node again on its data and waits for three voters. Prints one line per
round and the median and worst of each.

  bench/leader_takeover.py --build build --rounds 10
"""
import argparse
import statistics
import tempfile
import threading
import time
import urllib.parse

from warren_cluster import Node, call, free_port

def leader_seen_by(node):
    try:
        rows = node.nodes()
    except (OSError, ValueError):
        return None
    for row in rows:
        if row.get("metadata_leader"):
            return row["name"]
    return None


def voters_seen_by(node):
    try:
        return sum(1 for row in node.nodes() if row.get("metadata_voter") and row.get("running"))
    except (OSError, ValueError):
        return 0


def wait_for(what, check, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise SystemExit(f"gave up waiting for {what}")


def one_round(nodes, index):
    leader_name = wait_for("a leader with three voters",
                           lambda: voters_seen_by(nodes[0]) == 3 and leader_seen_by(nodes[0]))
    leader = next(n for n in nodes if n.name == leader_name)
    survivors = [n for n in nodes if n is not leader]
    answered = []
    stop = threading.Event()

    def change_until_answered(node):
        attempt = 0
        while not stop.is_set():
            attempt += 1
            try:
                status, _ = call(node.http, "PUT",
                                 f"/api/vhosts/{urllib.parse.quote(f'takeover-{index}-{node.name}-{attempt}')}")
                if status < 300:
                    answered.append(time.monotonic())
                    stop.set()
                    return
            except OSError:
                pass
            time.sleep(0.01)

    t0 = time.monotonic()
    leader.kill()
    threads = [threading.Thread(target=change_until_answered, args=(n,)) for n in survivors]
    for t in threads:
        t.start()
    named = wait_for("a new leader", lambda: (leader_seen_by(survivors[0]) not in
                                              (None, leader_name)) and time.monotonic())
    for t in threads:
        t.join()
    change = min(answered)
    leader.start()
    return leader_name, (named - t0) * 1000, (change - t0) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=10)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="warren-takeover-") as work:
        ports = [free_port() for _ in range(3)]
        nodes = [Node(opts.build, work, name, port, None if i == 0 else f"127.0.0.1:{ports[0]}")
                 for i, (name, port) in enumerate(zip("abc", ports))]
        try:
            for n in nodes:
                n.start()
            named, change = [], []
            for r in range(opts.rounds):
                killed, t_named, t_change = one_round(nodes, r)
                named.append(t_named)
                change.append(t_change)
                print(f"round {r + 1}: killed {killed}; a survivor named a new leader after "
                      f"{t_named:.0f} ms, a change was answered after {t_change:.0f} ms",
                      flush=True)
            print(f"named: median {statistics.median(named):.0f} ms, worst {max(named):.0f} ms; "
                  f"change answered: median {statistics.median(change):.0f} ms, "
                  f"worst {max(change):.0f} ms")
        finally:
            for n in nodes:
                if n.proc and n.proc.poll() is None:
                    n.kill()


if __name__ == "__main__":
    main()
