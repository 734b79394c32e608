#!/usr/bin/env bash
# What the management door costs the broker: the same amqp-bench runs against a node with its
# HTTP port closed (--http-port 0) and against one whose port is polled every second the way the
# web page and a Prometheus scraper poll it (/api/overview, /api/queues, /api/exchanges,
# /api/connections, /metrics). Runs alternate closed / polled, REPS times each, so that drift of
# the machine falls on both; one Markdown table prints every run and the medians.
#
#   gcc -O2 -o /tmp/amqp-bench ../shared/tools/amqp-bench/amqp-bench.c -lrabbitmq -lpthread
#   bench/management.sh                 # REPS=3 N=500000
#   ONLY=persistent REPS=7 bench/management.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-500000}
REPS=${REPS:-3}
AMQP_BENCH=${AMQP_BENCH:-/tmp/amqp-bench}
AMQP_PORT=${AMQP_PORT:-5679}
# shellcheck source=bench/lib.sh
source bench/lib.sh

figure() { grep -o "$1=[0-9.]*" <<<"$2" | head -1 | cut -d= -f2 || true; }

POLLER=
poll() {  # poll PORT: what a watched node answers every second, until killed (one process,
  # one kept-alive connection, so that the poller's own cost on the machine stays small)
  exec python3 - "$1" <<'PY'
import base64, http.client, sys, time
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
auth = {"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
while True:
    for path in ("/api/overview", "/api/queues", "/api/exchanges", "/api/connections", "/metrics"):
        conn.request("GET", path, headers=auth)
        conn.getresponse().read()
    time.sleep(1)
PY
}

run() {  # run MODE FIELD AMQP-BENCH-ARGS... ; prints amqp-bench's FIELD (messages per second)
  local mode=$1 field=$2; shift 2
  rm -rf "$WORK/data"
  if [ "$mode" = polled ]; then
    HTTP_PORT=5699 start_node "$WORK/data" --fsync batch
    poll 5699 &
    POLLER=$!
  else
    HTTP_PORT=0 start_node "$WORK/data" --fsync batch
  fi
  local out
  out=$("$AMQP_BENCH" -p "$AMQP_PORT" "$@" -T 120 2>&1 || true)
  [ -n "$POLLER" ] && kill "$POLLER" && wait "$POLLER" 2>/dev/null || true
  POLLER=
  stop_node
  figure "$field" "$out"
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%d); N=$N, REPS=$REPS" >&2
echo "| scenario | HTTP port | runs (msgs/s) | median |"
echo "|---|---|---|---:|"
scenario() {  # scenario LABEL FIELD AMQP-BENCH-ARGS...
  local label=$1 field=$2; shift 2
  if [ -n "${ONLY:-}" ] && ! [[ "$label" =~ $ONLY ]]; then return; fi
  local closed=() polled=()
  for _ in $(seq 1 "$REPS"); do
    closed+=("$(run closed "$field" "$@")")
    polled+=("$(run polled "$field" "$@")")
  done
  echo "| $label | closed | ${closed[*]} | $(median "${closed[@]}") |"
  echo "| $label | polled every second | ${polled[*]} | $(median "${polled[@]}") |"
}
scenario "publish + consume, manual ack, prefetch 100, 64 B" deliveries_per_s -m e2e -s 64 -n "$N" -f 100 -a manual
scenario "persistent + confirms (window 100), 64 B" accepted_msgs_per_s -m publish -s 64 -n "$((N / 2))" -P -c -w 100
