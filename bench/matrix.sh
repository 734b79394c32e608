#!/usr/bin/env bash
# The performance matrix: each scenario of the performance issue run with warren-bench against a
# node this script starts (fresh data dir on the real disk, --fsync batch), then memory figures:
# idle RSS, start time, peak RSS and memory per queued 64 B message. Prints one Markdown table.
#
# With RABBITMQ=1, each scenario is also run with ../shared/tools/amqp-bench against the
# loopback RabbitMQ of rmq-local.sh (started beforehand) in the same run, for a second column
# and the ratio. amqp-bench is built to $AMQP_BENCH (default /tmp/amqp-bench), as its README says.
#
#   bench/matrix.sh                         Warren only
#   RABBITMQ=1 bench/matrix.sh              both brokers, side by side
#   N=200000 N_PERSIST=50000 BUILD=build ONLY='pub|e2e' bench/matrix.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-200000}
N_PERSIST=${N_PERSIST:-50000}
RABBITMQ=${RABBITMQ:-0}
AMQP_BENCH=${AMQP_BENCH:-/tmp/amqp-bench}
RMQ_LOCAL=${RMQ_LOCAL:-../shared/tools/amqp-bench/rmq-local.sh}
# shellcheck source=bench/lib.sh
source bench/lib.sh
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# warren RESULT_KEY ARGS...: one warren-bench run on a fresh node; prints the figure
warren() {
  local key=$1; shift
  rm -rf "$WORK/data"
  start_node "$WORK/data" --fsync batch
  local out
  out=$("$BUILD/warren-bench" --port "$PORT" --json "$@" 2>>"$WORK/bench.log")
  PEAK_KB=$(( $(hwm_kb "$NODE_PID") > ${PEAK_KB:-0} ? $(hwm_kb "$NODE_PID") : ${PEAK_KB:-0} ))
  stop_node
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$out" "$key"
}

# rabbit FIELD ARGS...: one amqp-bench run against RabbitMQ; prints FIELD of its output
rabbit() {
  local field=$1; shift
  [ "$RABBITMQ" = 1 ] || { echo "-"; return; }
  "$AMQP_BENCH" "$@" -B "$("$RMQ_LOCAL" pid)" -T 120 | grep -o "$field=[0-9.]*" | head -1 | cut -d= -f2
}

ROWS=()
row() {  # row LABEL WARREN_FIGURE RABBIT_FIGURE UNIT
  ROWS+=("$1|$4|$2|$3")
  printf '  %-52s warren %-12s rabbitmq %s\n' "$1" "$2" "$3" >&2
}

scenario() {  # scenario LABEL UNIT WARREN_KEY "WARREN ARGS" RABBIT_FIELD "AMQP-BENCH ARGS"
  local label=$1 unit=$2 wkey=$3 wargs=$4 rfield=$5 rargs=$6
  if [ -n "${ONLY:-}" ] && ! [[ "$label" =~ $ONLY ]]; then return; fi
  local r
  # shellcheck disable=SC2086
  r=$(rabbit "$rfield" $rargs)
  # amqp-bench prints latency in microseconds
  if [ "$unit" = ms ] && [ "$r" != - ]; then r=$(python3 -c "print($r / 1000)"); fi
  # shellcheck disable=SC2086
  row "$label" "$(warren "$wkey" $wargs)" "$r" "$unit"
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)" >&2
# Publish-only and end-to-end runs have one producer and one consumer connection; acks are one
# per message unless said; persistent runs use durable queues and a confirm window of 100.
scenario "publish only, 64 B" msgs/s confirmed_per_s \
  "--consumers 0 --count $N --size 64" accepted_msgs_per_s "-m publish -s 64 -n $N"
scenario "publish only, 4 KiB" msgs/s confirmed_per_s \
  "--consumers 0 --count $N --size 4096" accepted_msgs_per_s "-m publish -s 4096 -n $N"
scenario "persistent + confirms (window 100), 64 B" msgs/s confirmed_per_s \
  "--consumers 0 --count $N_PERSIST --size 64 --persistent --confirm 100 --batch 50" \
  accepted_msgs_per_s "-m publish -s 64 -n $N_PERSIST -P -c -w 100"
scenario "persistent + confirms (window 100), 4 KiB" msgs/s confirmed_per_s \
  "--consumers 0 --count $N_PERSIST --size 4096 --persistent --confirm 100 --batch 50" \
  accepted_msgs_per_s "-m publish -s 4096 -n $N_PERSIST -P -c -w 100"
scenario "publish + consume, manual ack, prefetch 100, 64 B" msgs/s received_per_s \
  "--count $N --size 64 --prefetch 100" deliveries_per_s "-m e2e -s 64 -n $N -f 100 -a manual"
scenario "publish + consume, auto ack, 64 B" msgs/s received_per_s \
  "--count $N --size 64 --auto-ack" deliveries_per_s "-m e2e -s 64 -n $N -a auto"
scenario "publish + consume, manual ack, prefetch 100, 4 KiB" msgs/s received_per_s \
  "--count $N --size 4096 --prefetch 100" deliveries_per_s \
  "-m e2e -s 4096 -n $N -f 100 -a manual"
scenario "fanout to 4 queues, 64 B (deliveries)" deliveries/s received_per_s \
  "--count $N --size 64 --exchange-type fanout --queues 4 --consumers 4 --prefetch 100" \
  deliveries_per_s "-m fanout -q 4 -s 64 -n $N -f 100 -a manual"
scenario "topic, 4 of 16 queues, 64 B (deliveries)" deliveries/s received_per_s \
  "--count $N --size 64 --exchange-type topic --queues 16 --consumers 16 --prefetch 100" \
  deliveries_per_s "-m topic -s 64 -n $N -f 100 -a manual"
scenario "latency p50 at 10k msgs/s, 64 B" ms p50_ms \
  "--count 50000 --rate 10000 --size 64 --prefetch 100" p50 \
  "-m e2e -s 64 -n 50000 -r 10000 -f 100 -a manual"
scenario "latency p99 at 10k msgs/s, 64 B" ms p99_ms \
  "--count 50000 --rate 10000 --size 64 --prefetch 100" p99 \
  "-m e2e -s 64 -n 50000 -r 10000 -f 100 -a manual"

if [ -z "${ONLY:-}" ] || [[ "memory" =~ $ONLY ]]; then
  # Memory: idle, start, and 1M queued 64 B messages (transient, no consumer).
  rm -rf "$WORK/data"
  start_node "$WORK/data" --fsync batch
  sleep 0.5
  idle=$(rss_kb "$NODE_PID")
  start_ms=$START_MS
  "$BUILD/warren-bench" --port "$PORT" --consumers 0 --count 1000000 --size 64 --keep --json \
    >/dev/null 2>>"$WORK/bench.log"
  sleep 0.5
  full=$(rss_kb "$NODE_PID")
  PEAK_KB=$(( $(hwm_kb "$NODE_PID") > ${PEAK_KB:-0} ? $(hwm_kb "$NODE_PID") : ${PEAK_KB:-0} ))
  stop_node
  r_per_msg=- r_idle=-
  if [ "$RABBITMQ" = 1 ]; then
    bp=$("$RMQ_LOCAL" pid)
    r_idle_kb=$(rss_kb "$bp")
    r_idle=$(( r_idle_kb / 1024 ))
    r_end_mb=$("$AMQP_BENCH" -m publish -s 64 -n 1000000 -B "$bp" -T 300 |
      grep -o 'broker_rss_end_mb=[0-9.]*' | cut -d= -f2)
    r_per_msg=$(python3 -c "print(round(($r_end_mb * 1024 - $r_idle_kb) * 1024 / 1e6))")
  fi
  row "memory per queued 64 B message (1M queued)" "$(( (full - idle) * 1024 / 1000000 ))" \
    "$r_per_msg" B
  row "idle RSS" "$(( idle / 1024 ))" "$r_idle" MiB
  row "start to ready" "$start_ms" "-" ms
  row "peak RSS of the node over the matrix" "$(( PEAK_KB / 1024 ))" "-" MiB
fi

echo
print_table "scenario" "${ROWS[@]}"
