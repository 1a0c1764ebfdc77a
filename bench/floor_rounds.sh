#!/usr/bin/env bash
# Streams against the floor (bench/src/bin/floor.rs), in rounds, on a private Redis:
# server CPU per delivered event and p99 publish -> receipt, by bench/src/bin/loadgen.rs.
#
#   cargo build --release --workspace --bins
#   bench/floor_rounds.sh [BINARY ...]     # default: target/release/firehose
#
# Each round runs, per transport, the floor and then every binary in turn (give
# two builds to compare them alternating; every other round in reverse order),
# a fresh server per run, Redis flushed between runs.
# Environment: ROUNDS (default 3), TRANSPORTS (default "sse ws"), CLIENTS
# (default 1000), RATE (default 100), SECONDS_EACH (default 15), REDIS_PORT
# (default 6390), PORT (default 8080).
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
redis-server --port "$RPORT" --save "" --appendonly no --dir "$WORK" --daemonize yes \
  --pidfile "$WORK/redis.pid" >/dev/null
trap 'redis-cli -p $RPORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
sleep 0.3
RPID=$(cat "$WORK/redis.pid")
REDIS=redis://127.0.0.1:$RPORT

# Starts "$@" as the server, runs loadgen over TRANSPORT against it, prints
# the lines that matter under NAME.
run() {
  local name=$1 transport=$2; shift 2
  redis-cli -p "$RPORT" flushall >/dev/null
  "$@" >"$WORK/server.log" 2>&1 &
  local pid=$!
  sleep 1
  local out
  out=$($LOADGEN --addr "127.0.0.1:$PORT" --redis-url "$REDIS" --server-pid "$pid" \
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
    run floor "$transport" $FLOOR --transport "$transport" --listen "127.0.0.1:$PORT" --redis-url "$REDIS"
    # Odd rounds run the builds in the order given, even rounds reversed:
    # on this host the slot right after the floor measured cheaper than the
    # next (2026-11-29: one pair of builds 1.13x in one order, 1.05x in the
    # other, docs/benchmarks.md).
    order=("${BINS[@]}")
    if [ $((round % 2)) -eq 0 ]; then
      order=()
      for ((i = ${#BINS[@]} - 1; i >= 0; i--)); do order+=("${BINS[$i]}"); done
    fi
    for bin in "${order[@]}"; do
      run "$bin" "$transport" "$bin" serve --listen "127.0.0.1:$PORT" --redis-url "$REDIS" \
        --max-streams-per-user 100000
    done
  done
done
