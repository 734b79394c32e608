#!/usr/bin/env bash
# A throwaway RabbitMQ cluster of N nodes on this machine, loopback only, from Debian's
# rabbitmq-server package: nodes rmq1@localhost .. rmqN@localhost, all state under $RMQ_DIR
# (default /tmp/rmq-cluster), one shared Erlang cookie (a shared $HOME), nodes 2..N joined to
# node 1 with `rabbitmqctl join_cluster`. Node i listens for AMQP on $BASE_AMQP+i, for its
# management API on $BASE_HTTP+i (with PLUGINS=rabbitmq_management, the default) and for
# Erlang distribution on $BASE_DIST+i.
#
#   bench/rmq_cluster.sh start [N]   # N defaults to 3; prints "amqp=P1,P2,.. http=H1,H2,.."
#   bench/rmq_cluster.sh stop [N]
#   bench/rmq_cluster.sh ctl I ARGS  # rabbitmqctl against node I
#   bench/rmq_cluster.sh kill9 I     # kill -9 of node I's Erlang VM (failover measurements)
#   bench/rmq_cluster.sh start1 I    # (re)start node I alone, after a kill9
#
# Used by bench/metadata_log.sh (RMQ=1); meant for the quorum-queue comparison too.
set -euo pipefail
RMQ_DIR=${RMQ_DIR:-/tmp/rmq-cluster}
BASE_AMQP=${BASE_AMQP:-5680}
BASE_HTTP=${BASE_HTTP:-15680}
BASE_DIST=${BASE_DIST:-25680}
PLUGINS=${PLUGINS:-rabbitmq_management}
SBIN=$(ls -d /usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin | tail -1)

# node_env I: the environment of node I, for its server and for rabbitmqctl against it.
node_env() {
  local i=$1 d="$RMQ_DIR/node$1"
  export HOME="$RMQ_DIR/home"
  export RABBITMQ_CONF_ENV_FILE="$d/etc/rabbitmq-env.conf"
  export RABBITMQ_CONFIG_FILE="$d/etc/rabbitmq.conf"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$d/etc/enabled_plugins"
  export RABBITMQ_MNESIA_BASE="$d/mnesia"
  export RABBITMQ_LOG_BASE="$d/log"
  export RABBITMQ_PID_FILE="$d/rabbit.pid"
  export RABBITMQ_NODENAME="rmq$i@localhost"
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT=$((BASE_AMQP + i))
  export RABBITMQ_DIST_PORT=$((BASE_DIST + i))
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export PATH="$SBIN:$PATH"
}

ctl() {  # ctl I ARGS...
  local i=$1; shift
  (node_env "$i"; rabbitmqctl -n "rmq$i@localhost" "$@")
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_node I: writes node I's files (once) and starts it; returns once it has started.
start_node() {
  local i=$1 d="$RMQ_DIR/node$1"
  mkdir -p "$RMQ_DIR/home" "$d"/{mnesia,log,etc}
  [ -f "$d/etc/rabbitmq.conf" ] || cat > "$d/etc/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$((BASE_AMQP + i))
management.tcp.port = $((BASE_HTTP + i))
management.tcp.ip = 127.0.0.1
loopback_users.guest = true
log.file.level = warning
EOF
  [ -f "$d/etc/enabled_plugins" ] || echo "[${PLUGINS}]." > "$d/etc/enabled_plugins"
  : > "$d/etc/rabbitmq-env.conf"
  (
    node_env "$i"
    setsid nohup "$SBIN/rabbitmq-server" > "$d/server.out" 2>&1 < /dev/null &
    echo $! > "$d/launcher.pid"
  )
  for _ in $(seq 1 1200); do
    port_open $((BASE_AMQP + i)) && break
    sleep 0.05
  done
  ctl "$i" -q await_startup
}

case "${1:-}" in
  start)
    n=${2:-3}
    mkdir -p "$RMQ_DIR"
    port_open 4369 && echo 0 > "$RMQ_DIR/had_epmd" || echo 1 > "$RMQ_DIR/had_epmd"
    for i in $(seq 1 "$n"); do start_node "$i"; done
    for i in $(seq 2 "$n"); do
      ctl "$i" -q stop_app
      ctl "$i" -q join_cluster rmq1@localhost
      ctl "$i" -q start_app
    done
    if [ "$(cat "$RMQ_DIR/had_epmd")" = 1 ]; then
      ss -ltnpH 'sport = :4369' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 \
        > "$RMQ_DIR/epmd.pid" || true
    fi
    amqp=() http=()
    for i in $(seq 1 "$n"); do
      amqp+=($((BASE_AMQP + i)))
      http+=($((BASE_HTTP + i)))
    done
    running=$(ctl 1 -q cluster_status --formatter json |
      python3 -c 'import json,sys; print(len(json.load(sys.stdin)["running_nodes"]))')
    [ "$running" = "$n" ] || { echo "only $running of $n RabbitMQ nodes run clustered" >&2; exit 1; }
    echo "amqp=$(IFS=,; echo "${amqp[*]}") http=$(IFS=,; echo "${http[*]}")"
    ;;
  stop)
    n=${2:-3}
    for i in $(seq "$n" -1 1); do
      [ -d "$RMQ_DIR/node$i" ] || continue
      ctl "$i" -q stop >/dev/null 2>&1 || true
      lp=$(cat "$RMQ_DIR/node$i/launcher.pid" 2>/dev/null || true)
      for _ in $(seq 1 100); do
        [ -n "$lp" ] && kill -0 "$lp" 2>/dev/null || break
        sleep 0.1
      done
    done
    if [ -s "$RMQ_DIR/epmd.pid" ]; then
      kill "$(cat "$RMQ_DIR/epmd.pid")" 2>/dev/null || true
      rm -f "$RMQ_DIR/epmd.pid"
    fi
    ;;
  ctl) shift; ctl "$@" ;;
  kill9) kill -9 "$(cat "$RMQ_DIR/node$2/rabbit.pid")" ;;
  start1) start_node "$2" ;;
  *) echo "usage: $0 start [N] | stop [N] | ctl I ARGS | kill9 I | start1 I" >&2; exit 1 ;;
esac
