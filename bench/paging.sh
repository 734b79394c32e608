#!/usr/bin/env bash
# Queues bigger than memory: N persistent messages published with confirms into one durable
# queue (most of them paged out past the queue's memory budget), the node's memory at the end of
# publishing, a restart after kill -9 with all of them on disk, and consuming the backlog with
# manual acks, against the same backlog of transient messages held in memory. Prints figures;
# asserts nothing.
#
#   bench/paging.sh                                  (1M messages of 1 KiB, after building)
#   N=10000000 SIZE=1024 BUILD=build bench/paging.sh (the issue's 10M scenario: ~11 GB of disk)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-1000000}
SIZE=${SIZE:-1024}
NODE_FLAGS=${NODE_FLAGS:-}
MEM_N=${MEM_N:-$(( N < 1000000 ? N : 1000000 ))}  # the in-memory backlog must fit in RAM
# shellcheck source=bench/lib.sh
source bench/lib.sh
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
mib() { echo $(( $1 / 1024 )); }
json_field() { python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])[sys.argv[2]]))' "$1" "$2"; }
queue_field() {  # queue_field FIELD: of the bench's queue, from warrenctl list queues
  "$BUILD/warrenctl" --port "$PORT" --json list queues |
    python3 -c 'import json,sys; q=[q for q in json.load(sys.stdin) if q["name"]=="warren-bench-0"][0]; print(q[sys.argv[1]])' "$1"
}
bench() { "$BUILD/warren-bench" --port "$PORT" --json --keep "$@" 2>>"$WORK/bench.log"; }

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d); N=$N, $SIZE B bodies"

# shellcheck disable=SC2086
start_node "$WORK/data" $NODE_FLAGS
idle_kb=$(rss_kb "$NODE_PID")
out=$(bench --consumers 0 --count "$N" --size "$SIZE" --persistent --confirm 100 --batch 50)
end_kb=$(rss_kb "$NODE_PID")
echo "publish with confirms (window 100): $(json_field "$out" confirmed_per_s) msgs/s"
echo "  node RSS: idle $(mib "$idle_kb") MiB, end of publishing $(mib "$end_kb") MiB," \
  "peak $(mib "$(hwm_kb "$NODE_PID")") MiB"
echo "  queue: $(queue_field messages_ready) ready, $(queue_field messages_paged_out) paged out," \
  "$(queue_field memory) bytes held in memory"
echo "  memory per queued message: $(( (end_kb - idle_kb) * 1024 / N )) B (RSS growth / N)"
echo "  on disk: $(du -sh "$WORK/data/queues" | cut -f1)"

kill -9 "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true; NODE_PID=
# shellcheck disable=SC2086
start_node "$WORK/data" $NODE_FLAGS
echo "restart after kill -9: ready in $START_MS ms, RSS $(mib "$(rss_kb "$NODE_PID")") MiB"
grep -o "recovered .*" "$WORK/node.log" | sed 's/^/  /'

out=$(bench --producers 0 --count "$N" --size "$SIZE" --persistent --prefetch 100)
echo "consume the persistent backlog, manual acks, prefetch 100: $(json_field "$out" received_per_s) msgs/s"
echo "  node RSS after draining: $(mib "$(rss_kb "$NODE_PID")") MiB, peak $(mib "$(hwm_kb "$NODE_PID")") MiB"
stop_node

# A backlog of transient messages, all in memory (no paging), for the in-memory rate.
rm -rf "$WORK/data"
start_node "$WORK/data" --queue-memory-budget 0 --queue-memory-per-queue 0
bench --consumers 0 --count "$MEM_N" --size "$SIZE" >/dev/null
held_kb=$(rss_kb "$NODE_PID")
out=$(bench --producers 0 --count "$MEM_N" --size "$SIZE" --prefetch 100)
echo "consume a transient backlog of $MEM_N held in memory, manual acks, prefetch 100:" \
  "$(json_field "$out" received_per_s) msgs/s"
echo "  node RSS with the backlog $(mib "$held_kb") MiB, after draining $(mib "$(rss_kb "$NODE_PID")") MiB"
stop_node
