#!/usr/bin/env bash
# Cluster throughput: the same warren-bench scenario against a queue on the node the bench is
# connected to (one node), and against a queue that lives on another node of a 2-node cluster
# (every publish and every delivery crosses CAF's middleman), and the time a killed node takes to
# rejoin. Prints one Markdown table. Usage: BUILD=build bash bench/cluster.sh [SECONDS]
set -euo pipefail
BUILD=${BUILD:-build}
SECS=${1:-5}
WORK=$(mktemp -d /var/tmp/warren-cluster-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
SECRET=bench-secret

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME CLUSTER_PORT [flags...]: sets PORT to the node's client port once it is ready.
start() {
  local name=$1 cport=$2; shift 2
  local log="$WORK/$name.log"
  mkdir -p "$WORK/$name"
  "$BUILD/warren-node" --port 0 --amqp-port 0 --data-dir "$WORK/$name" --node-name "$name" \
    --cluster-port "$cport" --cluster-secret "$SECRET" "$@" 2>"$log" &
  PIDS+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 1 6000); do
    local port
    port=$(grep -ao 'ready on [^ ]*:[0-9]*' "$log" | sed 's/.*://' || true)
    if [ -n "$port" ]; then PORT=$port; return 0; fi
    sleep 0.005
  done
  echo "node $name did not start" >&2; cat "$log" >&2; exit 1
}

# rate PORT [bench flags...]: messages received per second.
rate() {
  local port=$1; shift
  "$BUILD/warren-bench" --port "$port" --time "$SECS" --json "$@" 2>/dev/null |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["received_per_s"]))'
}

# b_sees STATE: whether b lists node a as running (STATE = true) or down (false).
b_sees() {
  "$BUILD/warrenctl" --port "$B" --json list nodes |
    python3 -c "import json,sys; sys.exit(0 if any(r['name']=='a' and r['running']==$1 for r in json.load(sys.stdin)) else 1)"
}

declare_on() {  # declare_on PORT QUEUE [--durable]
  "$BUILD/warrenctl" --port "$1" declare-queue "$2" ${3:-} >/dev/null
}

CA=$(free_port); CB=$(free_port)
start a "$CA"; A=$PORT
start b "$CB" --join "127.0.0.1:$CA"; B=$PORT
until b_sees True; do sleep 0.1; done

scenario() {  # scenario LABEL [--durable] -- bench flags
  local label=$1 durable=$2; shift 3
  declare_on "$A" warren-bench-0 $durable
  local remote local_
  remote=$(rate "$B" "$@")       # bench on b, queue on a
  local_=$(rate "$A" "$@")       # bench on a, queue on a
  echo "| $label | $local_ | $remote | $(python3 -c "print(f'{$remote/$local_:.2f}')") |"
}

echo "| scenario (msgs/s received, ${SECS} s each) | queue on the bench's node | queue on the other node | remote / local |"
echo "|---|---:|---:|---:|"
scenario "publish + consume, manual ack, prefetch 100" "" -- --prefetch 100
scenario "publish + consume, auto ack" "" -- --auto-ack
scenario "persistent + confirms (window 100), consume" --durable -- --persistent --confirm 100 --batch 50

# Rejoin: a killed node restarts from its data dir; time from its start to b seeing it running.
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null || true
until b_sees False; do sleep 0.05; done
t0=$(date +%s%N)
start a "$CA"; A=$PORT
until b_sees True; do sleep 0.01; done
echo
echo "rejoin after kill -9 (start of the restarted node to the other node seeing it running): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
