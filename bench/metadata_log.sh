#!/usr/bin/env bash
# Vhost, user and permission changes through the management API (bench/metadata_http.py): on
# one Warren node, on a 3-node Warren cluster (where each goes through the metadata log: from a
# client on the leader, on a follower, and from CLIENTS clients spread over the members), and,
# with RMQ=1, on a loopback RabbitMQ with its management plugin (its own RMQ_DIR, port 15672)
# and on a 3-node RabbitMQ cluster (bench/rmq_cluster.sh, ports 15681-15683).
# Prints changes per second and the p50 / p99 latency of each kind, one row per setup.
#
#   bench/metadata_log.sh                     # Warren only
#   RMQ=1 ROUNDS=200 CLIENTS=8 bench/metadata_log.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-100}
CLIENTS=${CLIENTS:-4}
RMQ=${RMQ:-0}
RMQ_LOCAL=${RMQ_LOCAL:-../shared/tools/amqp-bench/rmq-local.sh}
WORK=$(mktemp -d /var/tmp/warren-metalog-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$RMQ" = 1 ]; then RMQ_DIR="$WORK/rmq" "$RMQ_LOCAL" stop >/dev/null 2>&1 || true; fi
  if [ "${RMQ3_STARTED:-0}" = 1 ]; then
    RMQ_DIR="$WORK/rmq3" bench/rmq_cluster.sh stop 3 >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME [flags...]: a node on free ports; sets PORT_<NAME> (Cap'n Proto) and HTTP_<NAME>.
start() {
  local name=$1; shift
  local log="$WORK/$name.log" http
  http=$(free_port)
  mkdir -p "$WORK/$name"
  "$BUILD/warren-node" --port 0 --amqp-port 0 --http-port "$http" --metrics-port 0 \
    --data-dir "$WORK/$name" --fsync batch "$@" 2>"$log" &
  PIDS+=($!)
  for _ in $(seq 1 6000); do
    local port
    port=$(grep -ao 'ready on [^ ]*:[0-9]*' "$log" 2>/dev/null | sed 's/.*://' || true)
    if [ -n "$port" ]; then
      eval "PORT_$name=$port HTTP_$name=$http"
      return 0
    fi
    sleep 0.005
  done
  echo "node $name did not start" >&2; cat "$log" >&2; exit 1
}

# The name of the metadata log's leader as node PORT lists it, once all three vote.
leader_of() {
  for _ in $(seq 1 600); do
    local rows
    rows=$("$BUILD/warrenctl" --port "$1" --json list nodes 2>/dev/null || true)
    local got
    got=$(python3 -c '
import json, sys
rows = json.loads(sys.argv[1] or "[]")
leaders = [r["name"] for r in rows if r.get("leader")]
if sum(1 for r in rows if r.get("voter")) == 3 and leaders: print(leaders[0])' "$rows" 2>/dev/null || true)
    if [ -n "$got" ]; then echo "$got"; return 0; fi
    sleep 0.1
  done
  echo "no leader with three voters" >&2; exit 1
}

bench() {  # bench LABEL PORTS CLIENTS
  local out
  out=$(python3 bench/metadata_http.py --ports "$2" --clients "$3" --rounds "$ROUNDS" \
    --prefix "b$RANDOM")
  echo "| $1 | $(sed -E 's/ops_per_s=([0-9]+).*/\1/' <<<"$out") | $(python3 -c '
import sys
f = dict(kv.split("=") for kv in sys.argv[1].split() if "=" in kv)
kinds = ["add_vhost", "add_user", "set_permissions", "delete_user", "delete_vhost"]
print(" | ".join(f[k + "_p50"] + " / " + f[k + "_p99"] for k in kinds) + " | " + f["errors"])' "$out") |"
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d); ROUNDS=$ROUNDS per client" >&2
echo "| setup | changes/s | add vhost p50 / p99 (ms) | add user | set permissions | delete user | delete vhost | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"

start solo
bench "Warren, 1 node, 1 client" "$HTTP_solo" 1
bench "Warren, 1 node, $CLIENTS clients" "$HTTP_solo" "$CLIENTS"
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true

SECRET=bench-secret
CA=$(free_port) CB=$(free_port) CC=$(free_port)
start a --node-name a --cluster-port "$CA" --cluster-secret "$SECRET"
start b --node-name b --cluster-port "$CB" --cluster-secret "$SECRET" --join "127.0.0.1:$CA"
start c --node-name c --cluster-port "$CC" --cluster-secret "$SECRET" --join "127.0.0.1:$CA"
LEADER=$(leader_of "$PORT_a")
eval "LEADER_HTTP=\$HTTP_$LEADER"
for f in a b c; do [ "$f" != "$LEADER" ] && { eval "FOLLOWER_HTTP=\$HTTP_$f"; break; }; done
bench "Warren, 3 nodes, 1 client on the leader" "$LEADER_HTTP" 1
bench "Warren, 3 nodes, 1 client on a follower" "$FOLLOWER_HTTP" 1
bench "Warren, 3 nodes, $CLIENTS clients on all" "$HTTP_a,$HTTP_b,$HTTP_c" "$CLIENTS"

if [ "$RMQ" = 1 ]; then
  mkdir -p "$WORK/rmq/etc"
  echo '[rabbitmq_management].' > "$WORK/rmq/etc/enabled_plugins"
  RMQ_DIR="$WORK/rmq" "$RMQ_LOCAL" start >&2
  for _ in $(seq 1 300); do
    (exec 3<>/dev/tcp/127.0.0.1/15672) 2>/dev/null && break
    sleep 0.1
  done
  bench "RabbitMQ 1 node, 1 client" 15672 1
  bench "RabbitMQ 1 node, $CLIENTS clients" 15672 "$CLIENTS"
  RMQ_DIR="$WORK/rmq" "$RMQ_LOCAL" stop >/dev/null 2>&1 || true
  # Its metadata in Mnesia, written on every node of the cluster in one transaction.
  RMQ3_STARTED=1
  RMQ_DIR="$WORK/rmq3" bench/rmq_cluster.sh start 3 2>/dev/null >&2
  bench "RabbitMQ 3 nodes, 1 client" 15681 1
  bench "RabbitMQ 3 nodes, $CLIENTS clients on all" 15681,15682,15683 "$CLIENTS"
fi
