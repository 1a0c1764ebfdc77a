#!/usr/bin/env bash
# The Mastodon streaming API against our own stream beneath it, side by
# side on one server: CLIENTS SSE clients of `/api/v1/streaming/public`
# (the Mastodon listener) or of `/api/v1/stream/sample?rate=1` (ours, the
# stream the Mastodon one is opened on), RATE events/s published straight
# into the log, server CPU per delivered event and p99 by
# bench/src/bin/loadgen.rs; and ours again with one Mastodon stream open
# beside (the cost of making each payload before routing); the kinds
# alternate, each run a fresh server.
#
#   cargo build --release --workspace --bins
#   bench/mastodon_streams.sh
#
# Environment: ROUNDS (default 3), CLIENTS (default 1000), RATE (default
# 100), SECONDS_EACH (default 15), REDIS_PORT (default 6391), PORT (default
# 8090; the Mastodon listener on PORT+1).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1000}
RATE=${RATE:-100}
SECS=${SECONDS_EACH:-15}
RPORT=${REDIS_PORT:-6391}
PORT=${PORT:-8090}
MPORT=$((PORT + 1))
BIN=target/release/firehose
LOADGEN=target/release/loadgen
[ -x $BIN ] && [ -x $LOADGEN ] || { echo "build first: cargo build --release --workspace --bins"; exit 2; }
command -v redis-server >/dev/null || { echo "needs redis-server"; exit 2; }
WORK=$(mktemp -d)
trap 'redis-cli -p $RPORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
redis-server --port "$RPORT" --save "" --appendonly no --dir "$WORK" --daemonize yes \
  --pidfile "$WORK/redis.pid" >/dev/null
sleep 0.3
RPID=$(cat "$WORK/redis.pid")
REDIS=redis://127.0.0.1:$RPORT

# run NAME PATH ADDR [beside]: a fresh server, loadgen's clients on PATH at
# ADDR; with `beside`, one Mastodon SSE stream open as well (so the hub
# makes each event's Mastodon payload before routing it, for every stream).
run() {
  local name=$1 path=$2 addr=$3 beside=${4:-}
  redis-cli -p "$RPORT" flushall >/dev/null
  $BIN serve --listen "127.0.0.1:$PORT" --mastodon-listen "127.0.0.1:$MPORT" \
    --redis-url "$REDIS" --max-streams-per-user 100000 --stream-connects-per-minute 1000000 \
    --history 0 >"$WORK/server.log" 2>&1 &
  local pid=$!
  sleep 1
  local side=""
  if [ -n "$beside" ]; then
    curl -s -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/api/v1/users" \
      -d '{"login":"beside","name":"B","email":"beside@example.com","password":"password123"}' >/dev/null
    local token
    token=$(curl -s -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$PORT/api/v1/sessions" \
      -d '{"identifier":"beside","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
    curl -s -N -H "Authorization: Bearer $token" "http://127.0.0.1:$MPORT/api/v1/streaming/public" >/dev/null &
    side=$!
  fi
  local out
  out=$($LOADGEN --addr "127.0.0.1:$PORT" --stream-addr "$addr" --path "$path" \
    --redis-url "$REDIS" --server-pid "$pid" --redis-pid "$RPID" --clients "$CLIENTS" \
    --rate "$RATE" --duration "$SECS" --transport sse 2>&1) || true
  [ -n "$side" ] && kill "$side" 2>/dev/null
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "== $name"
  echo "$out" | grep -E "connected|delivered|per delivered event|p99" || echo "$out" | tail -3
}

for round in $(seq 1 "$ROUNDS"); do
  echo "### round $round"
  if [ $((round % 2)) -eq 1 ]; then
    run ours "/api/v1/stream/sample?rate=1" "127.0.0.1:$PORT"
    run mastodon "/api/v1/streaming/public" "127.0.0.1:$MPORT"
    run "ours, a Mastodon stream beside" "/api/v1/stream/sample?rate=1" "127.0.0.1:$PORT" beside
  else
    run "ours, a Mastodon stream beside" "/api/v1/stream/sample?rate=1" "127.0.0.1:$PORT" beside
    run mastodon "/api/v1/streaming/public" "127.0.0.1:$MPORT"
    run ours "/api/v1/stream/sample?rate=1" "127.0.0.1:$PORT"
  fi
done
