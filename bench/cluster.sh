#!/usr/bin/env bash
# Cluster throughput: the same warren-bench scenario against a queue on the node the bench is
# connected to, and against a queue that lives on another node of a 2- or 3-node cluster (every
# publish and every delivery crosses CAF's middleman; the third node of a 3-node cluster only
# shares the metadata). With AMQPBENCH=/path/to/amqp-bench
# (built from shared/tools/amqp-bench), amqp-bench against a standalone node and against a
# cluster member. Then the time a killed node takes to rejoin. Prints Markdown tables.
# With TLS=1 the cluster link is mutual TLS (certificates made here with openssl), to measure
# what it costs against the loopback link in the clear.
# Usage: BUILD=build NODES=2|3 [TLS=1] [AMQPBENCH=...] bash bench/cluster.sh [SECONDS]
set -euo pipefail
BUILD=${BUILD:-build}
SECS=${1:-5}
NODES=${NODES:-2}
AMQPBENCH=${AMQPBENCH:-}
WORK=$(mktemp -d /var/tmp/warren-cluster-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
SECRET=bench-secret
TLS_FLAGS=()
if [ "${TLS:-0}" = 1 ]; then
  ssl() { openssl "$@" 2>/dev/null; }
  ssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca -keyout "$WORK/ca.key" -out "$WORK/ca.pem"
  ssl req -newkey rsa:2048 -nodes -subj /CN=bench-node -keyout "$WORK/node.key" -out "$WORK/node.csr"
  ssl x509 -req -days 1 -in "$WORK/node.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
    -CAcreateserial -out "$WORK/node.pem"
  TLS_FLAGS=(--cluster-tls-cert "$WORK/node.pem" --cluster-tls-key "$WORK/node.key"
             --cluster-tls-ca "$WORK/ca.pem")
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME CLUSTER_PORT [flags...]: sets PORT and AMQP to the node's ports once it is ready.
start() {
  local name=$1 cport=$2; shift 2
  local log="$WORK/$name.log"
  mkdir -p "$WORK/$name"
  "$BUILD/warren-node" --port 0 --amqp-port "$(free_port)" --http-port 0 --metrics-port 0 --data-dir "$WORK/$name" --node-name "$name" \
    --cluster-port "$cport" --cluster-secret "$SECRET" "${TLS_FLAGS[@]}" "$@" 2>"$log" &
  PIDS+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 1 6000); do
    local port
    port=$(grep -ao 'ready on [^ ]*:[0-9]*' "$log" 2>/dev/null | sed 's/.*://' || true)
    if [ -n "$port" ]; then
      PORT=$port
      AMQP=$(grep -ao 'AMQP 0-9-1 listener on [^ ]*:[0-9]*' "$log" | sed 's/.*://' || true)
      return 0
    fi
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

# b_sees STATE [NAME]: whether b lists node NAME (a) as running (STATE = True) or down (False).
b_sees() {
  "$BUILD/warrenctl" --port "$B" --json list nodes |
    python3 -c "import json,sys; sys.exit(0 if any(r['name']=='${2:-a}' and r['running']==$1 for r in json.load(sys.stdin)) else 1)"
}

declare_on() {  # declare_on PORT QUEUE [--durable]
  "$BUILD/warrenctl" --port "$1" declare-queue "$2" ${3:-} >/dev/null
}

CA=$(free_port); CB=$(free_port)
start a "$CA"; A=$PORT
start b "$CB" --join "127.0.0.1:$CA"; B=$PORT; B_AMQP=$AMQP
until b_sees True; do sleep 0.1; done
if [ "$NODES" = 3 ]; then
  CC=$(free_port)
  start c "$CC" --join "127.0.0.1:$CA"; C=$PORT
  until b_sees True c; do sleep 0.1; done
fi

scenario() {  # scenario LABEL [--durable] -- bench flags
  local label=$1 durable=$2; shift 3
  declare_on "$A" warren-bench-0 $durable
  local remote local_
  remote=$(rate "$B" "$@")       # bench on b, queue on a
  local_=$(rate "$A" "$@")       # bench on a, queue on a
  echo "| $label | $local_ | $remote | $(python3 -c "print(f'{$remote/$local_:.2f}')") |"
}

echo "$NODES-node cluster$([ "${TLS:-0}" = 1 ] && echo ", mutual TLS on the cluster link"), warren-bench, 64 B bodies"
echo
echo "| scenario (msgs/s received, ${SECS} s each) | queue on the bench's node | queue on the other node | remote / local |"
echo "|---|---:|---:|---:|"
scenario "publish + consume, manual ack, prefetch 100" "" -- --prefetch 100
scenario "publish + consume, auto ack" "" -- --auto-ack
scenario "persistent + confirms (window 100), consume" --durable -- --persistent --confirm 100 --batch 50

# amqp-bench declares its own queues (deleting them first), so they live on the node it is
# connected to: this compares a standalone node with a member of the cluster.
if [ -n "$AMQPBENCH" ]; then
  start solo 0; SOLO_AMQP=$AMQP  # cluster port 0: standalone
  abench() {  # abench PORT flags: deliveries/s (e2e) or confirmed msgs/s (publish)
    local out
    out=$("$AMQPBENCH" -p "$1" "${@:2}" -T 120 2>/dev/null)
    { grep -ao 'deliveries_per_s=[0-9]*' <<<"$out" || grep -ao 'accepted_msgs_per_s=[0-9]*' <<<"$out"; } |
      head -1 | sed 's/.*=//'
  }
  echo
  echo "| amqp-bench scenario (64 B; deliveries/s, or confirmed msgs/s for publish) | standalone node | member of the $NODES-node cluster |"
  echo "|---|---:|---:|"
  for args in "-m e2e -s 64 -n 200000 -f 100 -a manual" "-m e2e -s 64 -n 200000 -a auto" \
              "-m publish -s 64 -n 100000 -P -c"; do
    echo "| $args | $(abench "$SOLO_AMQP" $args) | $(abench "$B_AMQP" $args) |"
  done
fi

# Rejoin: a killed node restarts from its data dir; time from its start to b seeing it running.
kill -9 "$PID_a"
wait "$PID_a" 2>/dev/null || true
until b_sees False; do sleep 0.05; done
t0=$(date +%s%N)
start a "$CA"; A=$PORT
until b_sees True; do sleep 0.01; done
echo
echo "rejoin after kill -9 (start of the restarted node to the other node seeing it running): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
