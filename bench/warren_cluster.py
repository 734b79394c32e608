"""Warren nodes for the cluster benchmarks (leader_takeover.py, catch_up.py): warren-node
processes on loopback with a cluster port and the management API, and calls to that API."""
import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import time

AUTH = "Basic " + base64.b64encode(b"guest:guest").decode()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(port, method, path, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body="{}" if method == "PUT" else None,
                     headers={"Authorization": AUTH, "content-type": "application/json"})
        reply = conn.getresponse()
        body = reply.read()
        return reply.status, body
    finally:
        conn.close()


class Node:
    def __init__(self, build, work, name, cluster_port, join):
        self.name, self.cluster_port, self.join = name, cluster_port, join
        self.build, self.dir = build, os.path.join(work, name)
        self.http = free_port()
        self.amqp = free_port()
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None

    def start(self):
        args = [os.path.join(self.build, "warren-node"), "--port", "0", "--amqp-port", str(self.amqp),
                "--http-port", str(self.http), "--metrics-port", "0", "--data-dir", self.dir,
                "--node-name", self.name, "--cluster-port", str(self.cluster_port),
                "--cluster-secret", "bench-secret"]
        if self.join:
            args += ["--join", self.join]
        log = open(os.path.join(self.dir + ".log"), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if call(self.http, "GET", "/api/overview", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise SystemExit(f"node {self.name} did not start; see {self.dir}.log")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def nodes(self):
        status, body = call(self.http, "GET", "/api/nodes", timeout=5)
        return json.loads(body) if status == 200 else []


