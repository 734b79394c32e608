#!/usr/bin/env bash
# Metadata operations side by side over AMQP 0-9-1: bench/metadata_bench.c (built here with gcc
# and Debian's librabbitmq-dev) repeats rounds of exchange.declare, queue.declare, queue.bind,
# queue.unbind, queue.delete and exchange.delete on durable names, each waiting for its answer,
# from 1 client and from CLIENTS clients at once, against Warren's AMQP port and against the
# loopback RabbitMQ of rmq-local.sh, in the same run. One Markdown table prints both: operations
# per second of all clients, and the p50 / p99 latency of each operation with one client.
#
#   ../shared/tools/amqp-bench/rmq-local.sh start     # RabbitMQ on 5672, beforehand
#   bench/metadata.sh                                  # Warren on a free AMQP port
#   ROUNDS=5000 CLIENTS=8 bench/metadata.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-1000}
CLIENTS=${CLIENTS:-4}
RMQ_LOCAL=${RMQ_LOCAL:-../shared/tools/amqp-bench/rmq-local.sh}
AMQP_PORT=${AMQP_PORT:-5679}
# shellcheck source=bench/lib.sh
source bench/lib.sh

BENCH="$WORK/metadata_bench"
gcc -O2 -Wall -o "$BENCH" bench/metadata_bench.c -lrabbitmq -lpthread

field() { grep "^$1 " <<<"$3" | grep -o "$2=[0-9.]*" | cut -d= -f2 || true; }

run_both() {  # run_both CLIENTS ROUNDS: sets W and R to each broker's output
  local prefix="mb-$$-$1"
  rm -rf "$WORK/data"
  start_node "$WORK/data" --fsync batch
  W=$("$BENCH" -p "$AMQP_PORT" -c "$1" -r "$2" -P "$prefix" 2>&1 || true)
  stop_node
  R=$("$BENCH" -c "$1" -r "$2" -P "$prefix" 2>&1 || true)
  echo "warren ($1 clients):   $(tr '\n' ' ' <<<"$W")" >&2
  echo "rabbitmq ($1 clients): $(tr '\n' ' ' <<<"$R")" >&2
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d); ROUNDS=$ROUNDS" >&2
ROWS=()
run_both 1 "$ROUNDS"
ROWS+=("all operations, 1 client|ops/s|$(field all ops_per_s "$W")|$(field all ops_per_s "$R")")
for op in exchange.declare queue.declare queue.bind queue.unbind queue.delete exchange.delete; do
  ROWS+=("$op p50, 1 client|us|$(field "$op" p50_us "$W")|$(field "$op" p50_us "$R")")
  ROWS+=("$op p99, 1 client|us|$(field "$op" p99_us "$W")|$(field "$op" p99_us "$R")")
done
run_both "$CLIENTS" "$ROUNDS"
ROWS+=("all operations, $CLIENTS clients|ops/s|$(field all ops_per_s "$W")|$(field all ops_per_s "$R")")
echo
print_table "metadata operation (metadata_bench, durable, same client)" "${ROWS[@]}"
