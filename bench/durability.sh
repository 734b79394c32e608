#!/usr/bin/env bash
# Durability benchmark: persistent publishing with confirms under each --fsync policy, the
# disk's own synchronous write rate for reference, and recovery time and peak memory for a large
# queue of persistent messages. Prints figures; asserts nothing.
#
#   bench/durability.sh            (after building into ./build)
#   N=200000 SIZE=64 N_ALWAYS=3000 RECOVER_N=1000000 RECOVER_SIZE=1024 BUILD=build bench/durability.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-200000}
SIZE=${SIZE:-64}
N_ALWAYS=${N_ALWAYS:-3000}
RECOVER_N=${RECOVER_N:-1000000}
RECOVER_SIZE=${RECOVER_SIZE:-1024}
# shellcheck source=bench/lib.sh
source bench/lib.sh

lines() {  # lines COUNT SIZE: COUNT lines of SIZE-1 characters plus a newline
  python3 -c "import sys; n,s=int(sys.argv[1]),int(sys.argv[2]); l=('x'*(s-1)+'\n'); sys.stdout.write(l*n)" "$1" "$2"
}

publish_rate() {  # publish_rate POLICY COUNT
  local policy=$1 count=$2
  rm -rf "$WORK/d-$policy"
  start_node "$WORK/d-$policy" --fsync "$policy"
  "$BUILD/warrenctl" --port "$PORT" declare-queue q --durable >/dev/null
  lines "$count" "$SIZE" > "$WORK/input"
  local t0 t1
  t0=$(date +%s.%N)
  "$BUILD/warrenctl" --port "$PORT" publish "" q --persistent < "$WORK/input" > /dev/null
  t1=$(date +%s.%N)
  stop_node
  python3 -c "print(f'  --fsync $policy: $count persistent ${SIZE} B messages, confirmed, in {$t1-$t0:.2f} s = {$count/($t1-$t0):,.0f} msgs/s')"
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d)"
echo "disk: synchronous 4 KiB writes (dd oflag=dsync), for reference:"
dd if=/dev/zero of="$WORK/dd" bs=4k count=2000 oflag=dsync 2>&1 | tail -1 |
  awk '{ for (i=1;i<=NF;i++) if ($i=="s,") secs=$(i-1); printf "  %d synchronous writes in %s s = %.0f fdatasync/s\n", 2000, secs, 2000/secs }'
rm -f "$WORK/dd"

echo "persistent publish with confirms (warrenctl publish: batches of 2000, 4 in flight):"
publish_rate batch "$N"
publish_rate always "$N_ALWAYS"
publish_rate never "$N"

echo "recovery: $RECOVER_N persistent messages of $RECOVER_SIZE B, node killed with SIGKILL:"
rm -rf "$WORK/d-rec"
start_node "$WORK/d-rec"
"$BUILD/warrenctl" --port "$PORT" declare-queue big --durable >/dev/null
lines "$RECOVER_N" "$RECOVER_SIZE" | "$BUILD/warrenctl" --port "$PORT" publish "" big --persistent > /dev/null
kill -9 "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true; NODE_PID=
echo "  on disk: $(du -sh "$WORK/d-rec/queues" | cut -f1)"
t0=$(date +%s.%N)
"$BUILD/warren-node" --port 0 --amqp-port 0 --http-port 0 --metrics-port 0 --data-dir "$WORK/d-rec" 2>"$WORK/rec.log" &
NODE_PID=$!
until grep -q "ready on" "$WORK/rec.log"; do sleep 0.05; done
t1=$(date +%s.%N)
grep -o "recovered .*" "$WORK/rec.log" | sed 's/^/  /'
python3 -c "print(f'  start to ready: {$t1-$t0:.2f} s')"
# VmHWM: the peak resident set size so far, from the kernel.
echo "  peak RSS of the recovering node: $(awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' /proc/$NODE_PID/status)"
echo "  RSS once ready: $(awk '/VmRSS/ { printf "%d MiB", $2 / 1024 }' /proc/$NODE_PID/status)"
kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true; NODE_PID=
