#!/usr/bin/env bash
# The AMQP side by side: amqp-bench (../shared/tools/amqp-bench, built to $AMQP_BENCH) runs each
# scenario against Warren's AMQP port and against the loopback RabbitMQ of rmq-local.sh, in the
# same run, and one Markdown table prints both with the ratio. The same client on both brokers.
#
#   ../shared/tools/amqp-bench/rmq-local.sh start     # RabbitMQ on 5672, beforehand
#   bench/amqp_matrix.sh                               # Warren on a free AMQP port
#   N=200000 N_PERSIST=50000 ONLY='e2e' bench/amqp_matrix.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-200000}
N_PERSIST=${N_PERSIST:-50000}
AMQP_BENCH=${AMQP_BENCH:-/tmp/amqp-bench}
RMQ_LOCAL=${RMQ_LOCAL:-../shared/tools/amqp-bench/rmq-local.sh}
AMQP_PORT=${AMQP_PORT:-5679}
# shellcheck source=bench/lib.sh
source bench/lib.sh

# figure FIELD OUTPUT: the value of FIELD= in amqp-bench's output
figure() { grep -o "$1=[0-9.]*" <<<"$2" | head -1 | cut -d= -f2 || true; }

ROWS=()
scenario() {  # scenario LABEL FIELD AMQP-BENCH-ARGS...
  local label=$1 field=$2; shift 2
  if [ -n "${ONLY:-}" ] && ! [[ "$label" =~ $ONLY ]]; then return; fi
  rm -rf "$WORK/data"
  start_node "$WORK/data" --fsync batch
  local w r
  w=$("$AMQP_BENCH" -p "$AMQP_PORT" "$@" -B "$NODE_PID" -T 120 2>&1 || true)
  stop_node
  r=$("$AMQP_BENCH" "$@" -B "$("$RMQ_LOCAL" pid)" -T 120 2>&1 || true)
  local unit=msgs/s
  case $field in p50 | p99) unit=us ;; deliveries_per_s) unit=deliveries/s ;; esac
  ROWS+=("$label|$unit|$(figure "$field" "$w")|$(figure "$field" "$r")")
  printf '  %-46s warren %-10s rabbitmq %s\n' "$label" "$(figure "$field" "$w")" \
    "$(figure "$field" "$r")" >&2
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)" >&2
scenario "publish only, 64 B" accepted_msgs_per_s -m publish -s 64 -n "$N"
scenario "publish only, 4 KiB" accepted_msgs_per_s -m publish -s 4096 -n "$N"
scenario "publish only, 64 B, 4 queues" accepted_msgs_per_s -m publish -s 64 -n "$N" -q 4
scenario "publish + confirms (window 100), 64 B" accepted_msgs_per_s -m publish -s 64 -n "$N" -c -w 100
scenario "persistent + confirms, 64 B" accepted_msgs_per_s -m publish -s 64 -n "$N_PERSIST" -P -c -w 100
scenario "persistent + confirms, 4 KiB" accepted_msgs_per_s -m publish -s 4096 -n "$N_PERSIST" -P -c -w 100
scenario "e2e manual ack, prefetch 100, 64 B" deliveries_per_s -m e2e -s 64 -n "$N" -f 100 -a manual
scenario "e2e auto ack, 64 B" deliveries_per_s -m e2e -s 64 -n "$N" -a auto
scenario "e2e manual ack, 4 KiB" deliveries_per_s -m e2e -s 4096 -n "$N" -f 100 -a manual
scenario "e2e auto ack, 4 KiB" deliveries_per_s -m e2e -s 4096 -n "$N" -a auto
scenario "e2e persistent + confirms, manual ack, 64 B" deliveries_per_s -m e2e -s 64 -n "$N_PERSIST" -P -c -w 100 -f 100 -a manual
scenario "latency p50 at 1k msgs/s (us)" p50 -m e2e -s 64 -n 10000 -r 1000 -f 100 -a manual
scenario "latency p99 at 1k msgs/s (us)" p99 -m e2e -s 64 -n 10000 -r 1000 -f 100 -a manual
scenario "latency p50 at 10k msgs/s (us)" p50 -m e2e -s 64 -n 50000 -r 10000 -f 100 -a manual
scenario "latency p99 at 10k msgs/s (us)" p99 -m e2e -s 64 -n 50000 -r 10000 -f 100 -a manual
scenario "latency p50 at 30k msgs/s (us)" p50 -m e2e -s 64 -n 90000 -r 30000 -f 100 -a manual
scenario "latency p99 at 30k msgs/s (us)" p99 -m e2e -s 64 -n 90000 -r 30000 -f 100 -a manual
scenario "fanout to 4 queues, deliveries, 64 B" deliveries_per_s -m fanout -q 4 -s 64 -n "$N" -f 100 -a manual
scenario "fanout to 4 queues, no consumer, 64 B" accepted_msgs_per_s -m fanout -q 4 -s 64 -n "$N" -X
scenario "fanout to 4 queues, deliveries, 4 KiB" deliveries_per_s -m fanout -q 4 -s 4096 -n "$N" -f 100 -a manual
scenario "topic 4 of 16, deliveries, 64 B" deliveries_per_s -m topic -s 64 -n "$N" -f 100 -a manual
scenario "topic 4 of 16, no consumer, 64 B" accepted_msgs_per_s -m topic -s 64 -n "$N" -X
scenario "topic 4 of 16, deliveries, 4 KiB" deliveries_per_s -m topic -s 4096 -n "$N" -f 100 -a manual

echo
print_table "scenario (amqp-bench, same client)" "${ROWS[@]}"
