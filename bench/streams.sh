#!/usr/bin/env bash
# Stream queues side by side over AMQP 0-9-1: bench/stream_bench.c (built here with gcc and
# Debian's librabbitmq-dev) declares a stream, publishes N persistent messages with confirms
# (window 500) and replays them from x-stream-offset "first" (prefetch 1000, an ack every 100),
# against Warren's AMQP port and against the loopback RabbitMQ of rmq-local.sh, in the same run,
# at 64 B and 1 KiB. One Markdown table prints both with the ratio.
#
#   ../shared/tools/amqp-bench/rmq-local.sh start     # RabbitMQ on 5672, beforehand
#   bench/streams.sh                                   # Warren on a free AMQP port
#   N=1000000 bench/streams.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-500000}
RMQ_LOCAL=${RMQ_LOCAL:-../shared/tools/amqp-bench/rmq-local.sh}
AMQP_PORT=${AMQP_PORT:-5679}
# shellcheck source=bench/lib.sh
source bench/lib.sh

BENCH="$WORK/stream_bench"
gcc -O2 -Wall -o "$BENCH" bench/stream_bench.c -lrabbitmq

figure() { grep "^$1 " <<<"$2" | grep -o '[0-9]* msgs/s' | cut -d' ' -f1 || true; }

ROWS=()
run_size() {  # run_size BYTES
  local size=$1 w r queue="bench-$1-$$"
  rm -rf "$WORK/data"
  start_node "$WORK/data" --fsync batch
  w=$("$BENCH" -p "$AMQP_PORT" -s "$size" -n "$N" -q "$queue" 2>&1 || true)
  stop_node
  r=$("$BENCH" -s "$size" -n "$N" -q "$queue" 2>&1 || true)
  echo "warren:   $w" | tr '\n' ' ' >&2; echo >&2
  echo "rabbitmq: $r" | tr '\n' ' ' >&2; echo >&2
  ROWS+=("publish with confirms, $size B|msgs/s|$(figure publish "$w")|$(figure publish "$r")")
  ROWS+=("replay from first, $size B|msgs/s|$(figure replay "$w")|$(figure replay "$r")")
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d); N=$N" >&2
run_size 64
run_size 1024
echo
print_table "stream scenario (stream_bench, same client)" "${ROWS[@]}"
