# Shared by the bench scripts (sourced): a scratch dir on the real disk, removed on exit with any
# node still running, and starting and stopping warren-node on a free port.
# Expects BUILD (the build dir) to be set. Nodes listen for AMQP on $AMQP_PORT and for HTTP
# (management) on $HTTP_PORT, both off by default (so that a RabbitMQ on 5672 beside them is no
# conflict, and a bench measures the broker alone unless it asks for more).

WORK=$(mktemp -d /var/tmp/warren-bench-XXXXXX)  # on the real disk, not a tmpfs
NODE_PID=
cleanup() {
  [ -n "$NODE_PID" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_node DATA_DIR [flags...]: starts warren-node on a free port; sets NODE_PID, PORT and
# START_MS (start to the ready line).
start_node() {
  local dir=$1; shift
  local log="$WORK/node.log" t0
  t0=$(date +%s%N)
  "$BUILD/warren-node" --port 0 --amqp-port "${AMQP_PORT:-0}" --http-port "${HTTP_PORT:-0}" \
    --metrics-port "${METRICS_PORT:-0}" \
    --data-dir "$dir" "$@" 2>"$log" &
  NODE_PID=$!
  for _ in $(seq 1 6000); do
    PORT=$(grep -ao 'ready on [^ ]*:[0-9]*' "$log" | sed 's/.*://' || true)
    if [ -n "$PORT" ]; then
      START_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
      return 0
    fi
    sleep 0.005
  done
  echo "node did not start:"; cat "$log"; exit 1
}

stop_node() { kill "$NODE_PID"; wait "$NODE_PID" 2>/dev/null || true; NODE_PID=; }

# print_table HEADING ROW...: each ROW is "label|unit|warren|rabbitmq", both figures in `unit`.
# Prints one Markdown table; "Warren's advantage" is Warren / RabbitMQ for rates and
# RabbitMQ / Warren for latency and memory, so above 1 means Warren is better.
print_table() {
  local heading=$1; shift
  echo "| $heading | unit | Warren | RabbitMQ | Warren's advantage |"
  echo "|---|---|---:|---:|---:|"
  python3 - "$@" <<'PY'
import sys
def num(s):
    try: return float(s)
    except ValueError: return None
def fmt(x, unit):
    if x is None: return "-"
    if unit == "ms" and x < 10: return f"{x:.3f}"
    return f"{x:,.0f}"
for row in sys.argv[1:]:
    label, unit, w, q = row.split("|")
    a, b = num(w), num(q)
    ratio = "-"
    if a and b:
        lower_is_better = unit in ("ms", "us", "B", "MiB")
        ratio = f"{(b / a if lower_is_better else a / b):.2f}x"
    print(f"| {label} | {unit} | {fmt(a, unit)} | {fmt(b, unit)} | {ratio} |")
PY
}
