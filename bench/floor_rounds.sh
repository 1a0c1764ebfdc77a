#!/usr/bin/env bash
# Streams against the floor (bench/src/bin/floor.rs), in rounds, on a private Redis:
# server CPU per delivered event and p99 publish -> receipt, by bench/src/bin/loadgen.rs.
#
#   cargo build --release --workspace --bins
#   bench/floor_rounds.sh [BINARY[:LOADGEN] ...]   # default: target/release/firehose
#
# A build whose event log has another layout than this tree's is given with
# its own loadgen (BINARY:LOADGEN): loadgen publishes into the log directly.
# Each round runs, per transport, the floor and then every binary in turn (give
# two builds to compare them alternating; every other round in reverse order),
# a fresh server per run, Redis flushed between runs.
# Environment: ROUNDS (default 3), TRANSPORTS (default "sse ws"), CLIENTS
# (default 1000), RATE (default 100), SECONDS_EACH (default 15), REDIS_PORT
# (default 6390; a cluster's masters from there on), PORT (default 8080),
# MASTERS (0: one Redis, the default; N: an N-master Redis Cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
TRANSPORTS=${TRANSPORTS:-sse ws}
CLIENTS=${CLIENTS:-1000}
RATE=${RATE:-100}
SECS=${SECONDS_EACH:-15}
RPORT=${REDIS_PORT:-6390}
PORT=${PORT:-8080}
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(target/release/firehose)
FLOOR=target/release/floor
LOADGEN=target/release/loadgen
for tool in redis-server redis-cli; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install redis-server)"; exit 2; }
done
[ -x $FLOOR ] && [ -x $LOADGEN ] || { echo "build the tools first: cargo build --release --workspace --bins"; exit 2; }

WORK=$(mktemp -d)
MASTERS=${MASTERS:-0}
PORTS=$RPORT
[ "$MASTERS" -gt 0 ] && PORTS=$(seq "$RPORT" $((RPORT + MASTERS - 1)))
trap 'for p in $PORTS; do redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true; done; rm -rf "$WORK"' EXIT
CLUSTER_ARGS=()
[ "$MASTERS" -gt 0 ] && CLUSTER_ARGS=(--cluster-enabled yes --cluster-config-file nodes.conf)
for p in $PORTS; do
  mkdir -p "$WORK/$p"
  redis-server --port "$p" --save "" --appendonly no --dir "$WORK/$p" --daemonize yes \
    --pidfile "$WORK/$p/redis.pid" "${CLUSTER_ARGS[@]}" >/dev/null
done
sleep 0.3
RPID=$(cat "$WORK/$RPORT/redis.pid")
REDIS=redis://127.0.0.1:$RPORT
CLUSTER=()
if [ "$MASTERS" -gt 0 ]; then
  # shellcheck disable=SC2046
  redis-cli --cluster create $(printf '127.0.0.1:%s ' $PORTS) --cluster-replicas 0 --cluster-yes >/dev/null
  until redis-cli -p "$RPORT" cluster info | grep -q 'cluster_state:ok'; do sleep 0.2; done
  CLUSTER=(--redis-cluster "$(printf 'redis://127.0.0.1:%s,' $PORTS | sed 's/,$//')")
fi

# Starts "$@" as the server, runs loadgen over TRANSPORT against it, prints
# the lines that matter under NAME.
run() {
  local name=$1 transport=$2 loadgen=$3; shift 3
  for p in $PORTS; do redis-cli -p "$p" flushall >/dev/null; done
  "$@" "${CLUSTER[@]}" >"$WORK/server.log" 2>&1 &
  local pid=$!
  sleep 1
  local out
  out=$($loadgen --addr "127.0.0.1:$PORT" --redis-url "$REDIS" "${CLUSTER[@]}" --server-pid "$pid" \
    --redis-pid "$RPID" --clients "$CLIENTS" --rate "$RATE" --duration "$SECS" \
    --transport "$transport" 2>&1) || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "== $name ($transport)"
  echo "$out" | grep -E "delivered|per delivered event|p99" || echo "$out" | tail -3
}

for round in $(seq 1 "$ROUNDS"); do
  echo "### round $round"
  for transport in $TRANSPORTS; do
    run floor "$transport" $LOADGEN $FLOOR --transport "$transport" --listen "127.0.0.1:$PORT" --redis-url "$REDIS"
    # Odd rounds run the builds in the order given, even rounds reversed:
    # on this host the slot right after the floor measured cheaper than the
    # next (2026-11-29: one pair of builds 1.13x in one order, 1.05x in the
    # other, docs/benchmarks.md).
    order=("${BINS[@]}")
    if [ $((round % 2)) -eq 0 ]; then
      order=()
      for ((i = ${#BINS[@]} - 1; i >= 0; i--)); do order+=("${BINS[$i]}"); done
    fi
    for spec in "${order[@]}"; do
      bin=${spec%%:*} loadgen=$LOADGEN
      [[ $spec == *:* ]] && loadgen=${spec#*:}
      run "$bin" "$transport" "$loadgen" "$bin" serve --listen "127.0.0.1:$PORT" --redis-url "$REDIS" \
        --max-streams-per-user 100000
    done
  done
done
