#!/usr/bin/env bash
# Runs client libraries' OWN integration suites, unchanged, against a running
# AMQP 0-9-1 broker (Warren, or RabbitMQ for comparison):
#   pika     tests/acceptance  (pytest; Debian's python3-pytest/-twisted/-tornado/-gevent)
#   amqplib  test/             (node --test, as its `make test`; from the npm tarball)
#   pyamqp   py-amqp's t/integration                 (pytest -E rabbitmq, as its tox.ini)
#   kombu    kombu's t/integration/test_py_amqp.py   (pytest -E py-amqp, as its tox.ini)
#
#   test/suites/run_client_suites.sh [AMQP_URL]     (or WARREN_URL=...)
#   default URL amqp://guest:guest@127.0.0.1:5672; SUITES="pika amqplib pyamqp kombu"
#   picks suites.
#
# Sources are cached in $WARREN_SUITES_CACHE (default /tmp/warren-suites) and
# fetched only when missing. amqplib (AMQPLIB_VERSION, default 2.0.1: any whose
# test/ uses node:test; 0.10.x used mocha) comes from the npm registry, with only
# the packages its test/ requires (for 2.0.1: claire), not its devDependencies
# (biome, typescript, ...). pika's tests are not in any package reachable here
# (Debian ships only python-pika 1.2.0, and its source tarball is not served),
# so give a pika source tree once:
#   PIKA_SRC=/path/to/pika-checkout-or.tar.gz   (tag 1.4.0 of github.com/pika/pika)
# and likewise for py-amqp and kombu (Debian's python3-amqp and python3-kombu
# have no tests, and are older):
#   PYAMQP_SRC=/path/to/py-amqp-checkout-or.tar.gz  (tag v5.3.1 of github.com/celery/py-amqp)
#   KOMBU_SRC=/path/to/kombu-checkout-or.tar.gz     (tag v5.6.2 of github.com/celery/kombu)
# Both run on Debian's python3 with PYTHONPATH at these trees (kombu's suite uses
# the py-amqp tree too, so both need PYAMQP_SRC) and Debian's python3-vine;
# skip_by_name.py's "skip_by_name: amqp 5.3.1 from ..." lines say which amqp,
# kombu and vine were imported. Their tests are marked flaky(reruns=5):
# pytest-rerunfailures is not loaded, so each test gets one try, and a flaky
# one shows as a failure. Their broker comes from RABBITMQ_HOST and
# RABBITMQ_5672_TCP, set from the URL (user, password and vhost in the URL are
# not used: both connect as guest to vhost /). kombu's fixed-name queues are
# deleted before its run (see kombu_reset), or a second run fails.
#
# Tests that cannot apply to Warren are skipped BY NAME in the lists below, each
# with its reason (applied by pika_warren.py, node_test_skip.js and
# skip_by_name.py); a failure is otherwise a finding. pika and amqplib
# hard-code localhost:5672 in places: pika is re-pointed by pika_warren.py;
# amqplib's such tests (several in connect.test.js, all of callback_api.test.js)
# are skipped when the broker is elsewhere. amqplib runs as `make test` does,
# plus --test-timeout=60000 as a guard (not package.json's 1000: node 20
# applies it to each test FILE too, and codec.test.js alone takes over a
# second); "failed" counts node's cancelled tests too, and pytest's errors for
# pyamqp and kombu. On 2 cores pika and amqplib run in 10-20 s each, pyamqp in
# 1 s, kombu in ~40 s (its TTL and timeout tests sleep). Not part of CI:
# .ci/run does not call it, and CI has no way to fetch pika's, py-amqp's or
# kombu's source. Exit status: 0 all passed, 1 some test failed, 2 a suite
# could not run.
set -euo pipefail

URL=${1:-${WARREN_URL:-amqp://guest:guest@127.0.0.1:5672}}
CACHE=${WARREN_SUITES_CACHE:-/tmp/warren-suites}
SUITES=${SUITES:-pika amqplib pyamqp kombu}
PIKA_VERSION=1.4.0
PYAMQP_VERSION=5.3.1
KOMBU_VERSION=5.6.2
AMQPLIB_VERSION=${AMQPLIB_VERSION:-2.0.1}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # Debian's, which sees the python3-* packages

hostport=${URL#*://}; hostport=${hostport#*@}; hostport=${hostport%%[/?]*}
HOST=${hostport%:*}; PORT=${hostport##*:}
[ "$HOST" != "$hostport" ] || PORT=5672

# --- skip lists: "test name | reason" ---------------------------------------
PIKA_SKIP=()
if ! getent hosts www.google.com >/dev/null; then
  for t in asyncio select_connection tornado; do
    PIKA_SKIP+=("tests/acceptance/io_services_tests.py::TestGetaddrinfoWWWGoogleDotComPort80::test_with_${t}_io_services | resolves www.google.com: no DNS here")
  done
fi
# amqplib: "file::describe > ... > test" ("*" at the end: every test it prefixes)
AMQPLIB_SKIP=(
  "test/connect.test.js::Connect > Connect API > serverProperties | asserts the server's product is 'RabbitMQ'"
)
if [ "$PORT" != 5672 ] || ! [[ "$HOST" =~ ^(localhost|127\.0\.0\.1|\[::1\])$ ]]; then
  for t in "wrongly typed open option" "using custom heartbeat option" "wrongly typed heartbeat option" \
      "using plain credentials" "using amqplain credentials" "using unsupported mechanism"; do
    AMQPLIB_SKIP+=("test/connect.test.js::Connect > Connect API > $t | connects to localhost:5672 whatever URL says")
  done
  AMQPLIB_SKIP+=(
    "test/connect.test.js::Connect > Connect API > ipv6 | connects to [::1]:5672 whatever URL says"
    "test/callback_api.test.js::* | connect() without a URL: localhost:5672 whatever URL says"
  )
elif ! (exec 3<>/dev/tcp/::1/5672) 2>/dev/null; then
  AMQPLIB_SKIP+=("test/connect.test.js::Connect > Connect API > ipv6 | nothing listens on [::1]:5672 (warren-node --bind ::)")
fi
# py-amqp: pytest node ids (its "connection" fixture runs each test over plain
# AMQP and over TLS). Its CI broker is the rabbitmq:tls image, whose server
# certificate is signed by t/certs/ca_certificate.pem; the tree has that CA's
# certificate and client certificates but no server certificate or CA key.
PYAMQP_SKIP=()
tls_reason="TLS to :5671 with a server certificate signed by t/certs' CA (the suite's own docker image; not in the tree)"
PYAMQP_SKIP+=("t/integration/test_rmq.py::test_connect[tls] | $tls_reason")
for m in basic_publish basic_publish_confirm; do
  for f in False-True True-True False-False True-False; do
    PYAMQP_SKIP+=("t/integration/test_rmq.py::test_rabbitmq_operations::test_publish_consume[tls-$m-$f] | $tls_reason")
  done
done
PYAMQP_SKIP+=("t/integration/test_rmq.py::test_rabbitmq_operations::test_publish_get[tls] | $tls_reason")
if ! (exec 3<>"/dev/tcp/$HOST/5671") 2>/dev/null; then
  PYAMQP_SKIP+=("t/integration/test_rmq.py::test_tls_connect_fails | nothing listens on $HOST:5671 (AMQP over TLS)")
fi
if ! getent hosts tls-v1-2.badssl.com >/dev/null; then
  for t in test_tls_default_certs test_tls_no_default_certs_fails; do
    PYAMQP_SKIP+=("t/integration/test_rmq.py::$t | connects to tls-v1-2.badssl.com:1012: no DNS here")
  done
fi
# kombu: none (its failover and failed-connect tests need nothing on localhost:12345)
KOMBU_SKIP=()
skip_lines() { [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/ *| */\t/'; }

# --- fetching -----------------------------------------------------------------
debs() { # Debian packages, installed only when a module is missing
  "$PY" -c 'import pytest, pytest_timeout, twisted, tornado, gevent' 2>/dev/null && return
  apt-get update -q && apt-get install -y -q python3-pytest python3-pytest-timeout \
    python3-twisted python3-tornado python3-gevent
}

fetch_pika() {
  local dir=$CACHE/pika-$PIKA_VERSION tmp src
  [ -f "$dir/tests/acceptance/blocking_adapter_test.py" ] && return
  if [ -z "${PIKA_SRC:-}" ]; then
    echo "pika: no source in $dir; set PIKA_SRC (see header)" >&2; return 1
  fi
  tmp=$(mktemp -d)
  if [ -d "$PIKA_SRC" ]; then cp -a "$PIKA_SRC/." "$tmp/" || return
  else tar xzf "$PIKA_SRC" -C "$tmp" || return; fi
  src=$(dirname "$(find "$tmp" -maxdepth 2 -name pyproject.toml | head -1)")
  grep -q "__version__ = '$PIKA_VERSION'" "$src/pika/__init__.py" ||
    echo "pika: warning: PIKA_SRC is not pika $PIKA_VERSION" >&2
  mkdir -p "$CACHE" && rm -rf "$dir" && mv "$src" "$dir" && rm -rf "$tmp"
}

fetch_amqplib() {
  local dir=$CACHE/amqplib-$AMQPLIB_VERSION tgz=amqplib-$AMQPLIB_VERSION.tgz deps
  [ -f "$dir/.warren-deps-installed" ] && return
  rm -rf "$dir" && mkdir -p "$dir" &&
    (cd "$CACHE" && npm pack --silent "amqplib@$AMQPLIB_VERSION" >/dev/null) &&
    tar xzf "$CACHE/$tgz" -C "$dir" --strip-components=1 && rm "$CACHE/$tgz" || return
  if ! grep -rqs "require('node:test')" "$dir/test"; then
    echo "amqplib $AMQPLIB_VERSION: its test/ does not use node:test (0.10.x used mocha)" >&2; return 1
  fi
  # Not `npm install` in the package (its devDependencies bring biome, typescript,
  # ...): only the packages test/ requires, at the versions devDependencies gives.
  deps=$(cd "$dir" && node -e '
    const fs = require("fs"), path = require("path"), builtin = require("module").builtinModules;
    const pkg = require("./package.json"), want = { ...pkg.dependencies, ...pkg.devDependencies };
    const files = fs.readdirSync("test", { recursive: true }).filter((f) => f.endsWith(".js"));
    const names = new Set();
    for (const f of files)
      for (const [, m] of fs.readFileSync(path.join("test", f), "utf8").matchAll(/require\(\s*["\x27]([^"\x27]+)["\x27]/g))
        if (!m.startsWith(".") && !m.startsWith("node:") && !builtin.includes(m))
          names.add(m.startsWith("@") ? m.split("/").slice(0, 2).join("/") : m.split("/")[0]);
    console.log([...names].map((n) => `${n}@${want[n] || "latest"}`).join(" "));') || return
  echo "amqplib $AMQPLIB_VERSION test/ needs: ${deps:-nothing}" >&2
  if [ -n "$deps" ]; then
    # shellcheck disable=SC2086 # one word per package
    npm install --prefix "$dir/.testdeps" --no-save --no-package-lock --no-audit --no-fund \
      --ignore-scripts --loglevel=error $deps && ln -s .testdeps/node_modules "$dir/node_modules" || return
  fi
  touch "$dir/.warren-deps-installed"
}

# py-amqp and kombu: Debian's python3 with pytest, pytest-timeout and vine.
debs_celery() {
  "$PY" -c 'import pytest, pytest_timeout, vine' 2>/dev/null && return
  apt-get update -q && apt-get install -y -q python3-pytest python3-pytest-timeout python3-vine
}

# fetch_tree NAME VERSION SRC_VAR MARKER VERSION_FILE: a source tree (directory
# or .tar.gz in $SRC_VAR) into $CACHE/NAME-VERSION, unless MARKER is there.
fetch_tree() {
  local name=$1 version=$2 var=$3 marker=$4 vfile=$5 dir=$CACHE/$1-$2 tmp src
  [ -f "$dir/$marker" ] && return
  if [ -z "${!var:-}" ]; then
    echo "$name: no source in $dir; set $var (see header)" >&2; return 1
  fi
  tmp=$(mktemp -d)
  if [ -d "${!var}" ]; then cp -a "${!var}/." "$tmp/" || return
  else tar xzf "${!var}" -C "$tmp" || return; fi
  src=$tmp; [ -f "$src/$marker" ] || src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -1)
  [ -f "$src/$marker" ] || { echo "$name: $var has no $marker" >&2; rm -rf "$tmp"; return 1; }
  grep -q "__version__ = '$version'" "$src/$vfile" ||
    echo "$name: warning: $var is not $name $version" >&2
  mkdir -p "$CACHE" && rm -rf "$dir" && mv "$src" "$dir" && rm -rf "$tmp"
}
fetch_pyamqp() { fetch_tree py-amqp "$PYAMQP_VERSION" PYAMQP_SRC t/integration/test_rmq.py amqp/__init__.py; }
fetch_kombu() { fetch_tree kombu "$KOMBU_VERSION" KOMBU_SRC t/integration/test_py_amqp.py kombu/__init__.py; }

# --- running: each prints "passed failed skipped" on its last line -------------
run_pika() {
  debs >&2 && fetch_pika >&2 || { echo "- - -"; return; }
  (cd "$CACHE/pika-$PIKA_VERSION" &&
    PYTHONPATH=$HERE WARREN_SUITES_HOST=$HOST WARREN_SUITES_PORT=$PORT \
    WARREN_SUITES_SKIP="$(skip_lines ${PIKA_SKIP[@]+"${PIKA_SKIP[@]}"})" \
    "$PY" -m pytest -q -rfEs -p pika_warren -p no:cacheprovider --timeout=120 \
      tests/acceptance) > "$LOGS/pika.log" 2>&1 || true
  grep -E '^(FAILED|ERROR) tests/' "$LOGS/pika.log" >&2 || true
  local last; last=$(grep -E ' in [0-9.]+s' "$LOGS/pika.log" | tail -1) || true
  [ -n "$last" ] || { echo "- - -"; return; } # pytest did not finish
  echo "$(count passed "$last") $(count failed "$last") $(count skipped "$last")"
}

run_amqplib() {
  fetch_amqplib >&2 || { echo "- - -"; return; }
  local tap=$LOGS/amqplib.tap
  rm -f "$tap"
  # spec (readable) to the log, TAP to a file for the counts and failure names
  (cd "$CACHE/amqplib-$AMQPLIB_VERSION" &&
    URL=$URL WARREN_SUITES_SKIP="$(skip_lines ${AMQPLIB_SKIP[@]+"${AMQPLIB_SKIP[@]}"})" \
    node --require "$HERE/node_test_skip.js" --test --test-timeout=60000 \
      --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="$tap") > "$LOGS/amqplib.log" 2>&1 || true
  [ -f "$tap" ] && grep -q '^# pass ' "$tap" || { echo "- - -"; return; } # node --test did not finish
  tap_failures "$tap" >&2
  sed -n 's/^.*warren skip: entry matches/node_test_skip: skip-list entry matches/p' "$tap" >&2
  local p f c k; read -r p f c k < <(for w in pass fail cancelled skipped; do
    sed -n "s/^# $w \([0-9]*\)$/\1/p" "$tap" | tail -1; done | paste -sd' ')
  echo "$p $((f + c)) $k"
}

# run_pytest NAME DIR PYTHONPATH ENV SKIP_LINES PATH...: a celery suite's
# pytest as its tox.ini runs it (-E ENV), but without xdist and reruns, in DIR.
run_pytest() {
  local name=$1 dir=$2 pypath=$3 env=$4 skip=$5; shift 5
  (cd "$dir" &&
    PYTHONPATH=$HERE:$pypath RABBITMQ_HOST=$HOST RABBITMQ_5672_TCP=$PORT \
    WARREN_SUITES_SKIP="$skip" \
    "$PY" -m pytest -q -rfEs -E "$env" -p skip_by_name -p no:cacheprovider \
      -p no:rerunfailures -p no:xdist -p no:sugar -o addopts= --timeout=120 "$@") \
    > "$LOGS/$name.log" 2>&1 || true
  grep -E '^(FAILED|ERROR) t/' "$LOGS/$name.log" >&2 || true
  grep -E '^skip_by_name: ' "$LOGS/$name.log" >&2 || true
  local last; last=$(grep -E ' in [0-9.]+s' "$LOGS/$name.log" | tail -1) || true
  [ -n "$last" ] || { echo "- - -"; return; } # pytest did not finish
  echo "$(count passed "$last") $(($(count failed "$last") + $(count error "$last"))) $(count skipped "$last")"
}

run_pyamqp() {
  debs_celery >&2 && fetch_pyamqp >&2 || { echo "- - -"; return; }
  local src=$CACHE/py-amqp-$PYAMQP_VERSION
  run_pytest pyamqp "$src" "$src" rabbitmq \
    "$(skip_lines ${PYAMQP_SKIP[@]+"${PYAMQP_SKIP[@]}"})" t/integration
}

# kombu's tests declare durable queues of fixed names and leave some messages
# behind (test_publish_requeue_consume requeues 4 it never acks, and its next
# run then receives those first and fails): delete those queues before a run,
# as the suite's own CI gets a new broker each time.
kombu_reset() {
  (cd "$CACHE/kombu-$KOMBU_VERSION" && PYTHONPATH=$CACHE/py-amqp-$PYAMQP_VERSION \
    "$PY" - "$HOST" "$PORT" t/integration/common.py <<'EOF'
import re, sys
import amqp
host, port, path = sys.argv[1:]
names = sorted(set(re.findall(r"(?:Queue|SimpleQueue|SimpleBuffer)\(\s*'([^']+)'", open(path).read())))
messages = 0
with amqp.Connection(host='%s:%s' % (host, port)) as conn:
    for name in names:
        ch = conn.channel()
        try:
            messages += ch.queue_delete(name) or 0
            ch.close()
        except amqp.exceptions.NotFound:  # closes the channel
            pass
print('kombu: deleted its %d queues (%d messages in them) before the run' % (len(names), messages))
EOF
  )
}

run_kombu() {
  debs_celery >&2 && fetch_pyamqp >&2 && fetch_kombu >&2 && kombu_reset >&2 || { echo "- - -"; return; }
  local src=$CACHE/kombu-$KOMBU_VERSION
  run_pytest kombu "$src" "$src:$CACHE/py-amqp-$PYAMQP_VERSION" py-amqp \
    "$(skip_lines ${KOMBU_SKIP[@]+"${KOMBU_SKIP[@]}"})" t/integration/test_py_amqp.py
}

# "FAILED suite > ... > test: first line of the error" for each failed (or
# cancelled) test of a node --test TAP report, suites failing only through
# their tests left out; and node's "Error: ..." diagnostics (an error after a
# test ended fails its file, reported as "FAILED <file>: 'test failed'").
tap_failures() {
  awk '
    /^ *# Error: / { sub(/^ *# Error: /, "ERROR "); print; next } # e.g. activity after a test ended
    /^ *# Subtest: / { d = index($0, "#") - 1; name[d / 4] = substr($0, d + 12); next }
    /^ *not ok [0-9]+ - / {
      d = match($0, /[^ ]/) - 1; path = name[0]
      for (i = 1; i <= d / 4; i++) path = path " > " name[i]
      failing = 1; type = ""; err = ""; next }
    failing && /^ *failureType: / { type = $2; next }
    failing && err == "" && /^ *error: \|-$/ { getline; err = $0; next }
    failing && err == "" && /^ *error: / { err = $0; sub(/^ *error: /, "", err); next }
    failing && /^ *\.\.\.$/ {
      failing = 0; gsub(/^ +/, "", err)
      if (type != "\x27subtestsFailed\x27") print "FAILED " path ": " err }
  ' "$1"
}

count() { local n; n=$(grep -oE "[0-9]+ $1" <<<"$2" | tail -1 | cut -d' ' -f1) || true; echo "${n:-0}"; }

# --- main ----------------------------------------------------------------------
(exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null || { echo "no broker at $HOST:$PORT" >&2; exit 2; }
LOGS=$CACHE/logs; mkdir -p "$LOGS"
declare -A label=([pika]="pika $PIKA_VERSION tests/acceptance" [amqplib]="amqplib $AMQPLIB_VERSION test/"
  [pyamqp]="py-amqp $PYAMQP_VERSION t/integration" [kombu]="kombu $KOMBU_VERSION test_py_amqp.py")
rows=() tp=0 tf=0 ts=0 status=0
for s in $SUITES; do
  echo "== $s against $URL (log: $LOGS/$s.log)" >&2
  t0=$SECONDS
  read -r p f k < <("run_$s" | tail -1) || true
  f=${f:-0} k=${k:-0}
  rows+=("$(printf '%-32s %7s %7s %8s %8s' "${label[$s]:-$s}" "${p:--}" "${f:--}" "${k:--}" $((SECONDS - t0)))")
  [[ "$p" =~ ^[0-9]+$ ]] || { status=2; p=0; } # suite did not run or report
  tp=$((tp + p)) tf=$((tf + ${f//-/0})) ts=$((ts + ${k//-/0}))
done
printf '\n%-32s %7s %7s %8s %8s\n' suite passed failed skipped seconds
printf '%s\n' "${rows[@]}"
echo "total: $tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ] || status=1
exit $status
