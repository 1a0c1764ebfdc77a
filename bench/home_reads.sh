#!/usr/bin/env bash
# Home reads by wrk, side by side with the read floor (bench/src/bin/read_floor.rs),
# on a private Redis: CPU per read of the server and of Redis, from /proc.
#
#   cargo build --release --workspace --bins
#   bench/home_reads.sh [BINARY ...]     # default: target/release/firehose
#
# For each binary in turn (give two builds to compare them alternating), and
# then for the floor (one Redis GET of the same page's bytes) and the floor
# from memory: a reader whose home holds 100 statuses of one author,
# `wrk -t2 -c64` on GET /api/v1/timelines/home (30 per page).
# Environment: ROUNDS (default 3), SECONDS_EACH (default 10), REDIS_PORT
# (default 6390), PORT (default 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_EACH:-10}
RPORT=${REDIS_PORT:-6390}
PORT=${PORT:-8080}
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(target/release/firehose)
FLOOR=target/release/read_floor
for tool in wrk redis-server redis-cli curl; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install wrk redis-server curl)"; exit 2; }
done
[ -x $FLOOR ] || { echo "build the tools first: cargo build --release --workspace --bins"; exit 2; }

WORK=$(mktemp -d)
redis-server --port "$RPORT" --save "" --appendonly no --dir "$WORK" --daemonize yes \
  --pidfile "$WORK/redis.pid" >/dev/null
trap 'redis-cli -p $RPORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
sleep 0.3
RPID=$(cat "$WORK/redis.pid")
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

# Runs wrk on URL with extra args, printing reads/s and CPU per read of $1.
measure() {
  local name=$1 pid=$2 url=$3; shift 3
  local s0 r0 s1 r1 n
  s0=$(cpu "$pid"); r0=$(cpu "$RPID")
  wrk -t2 -c64 -d"${SECS}s" "$@" "$url" >"$WORK/wrk.out" 2>&1
  s1=$(cpu "$pid"); r1=$(cpu "$RPID")
  n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
  awk -v name="$name" -v n="$n" -v s=$((s1 - s0)) -v r=$((r1 - r0)) \
    -v rps="$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")" \
    -v lat="$(awk '/Latency/ {print $2}' "$WORK/wrk.out")" 'BEGIN {
      printf "%-40s %9.0f reads/s  server %5.1f us/read  redis %5.1f us/read  mean latency %s\n",
        name, rps, s * 1e4 / n, r * 1e4 / n, lat }'
}

wait_up() { for _ in $(seq 100); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; return 1; }

# Seeds a reader following a writer with 100 statuses; prints the reader's token.
seed() {
  local h='content-type: application/json' base="http://127.0.0.1:$PORT/api/v1" writer tw tr
  curl -sf -XPOST -H "$h" "$base/users" \
    -d '{"login":"reader","name":"R","email":"r@example.com","password":"password1"}' >/dev/null
  writer=$(curl -sf -XPOST -H "$h" "$base/users" \
    -d '{"login":"writer","name":"W","email":"w@example.com","password":"password1"}' |
    sed 's/.*"id":"\([0-9]*\)".*/\1/')
  tr=$(curl -sf -XPOST -H "$h" "$base/sessions" -d '{"identifier":"reader","password":"password1"}' |
    sed 's/.*"token":"\([^"]*\)".*/\1/')
  tw=$(curl -sf -XPOST -H "$h" "$base/sessions" -d '{"identifier":"writer","password":"password1"}' |
    sed 's/.*"token":"\([^"]*\)".*/\1/')
  for i in $(seq 100); do
    curl -sf -XPOST -H "$h" -H "authorization: Bearer $tw" "$base/statuses" \
      -d "{\"message\":\"status number $i with some words in it to be realistic #tag\"}" >/dev/null
  done
  curl -sf -XPOST -H "authorization: Bearer $tr" "$base/users/$writer/follow" >/dev/null
  echo "$tr"
}

for round in $(seq "$ROUNDS"); do
  for bin in "${BINS[@]}"; do
    redis-cli -p "$RPORT" flushall >/dev/null
    FIREHOSE_RATE_LIMITS=off "$bin" serve --listen "127.0.0.1:$PORT" \
      --redis-url "redis://127.0.0.1:$RPORT" >"$WORK/server.log" 2>&1 &
    spid=$!
    wait_up "http://127.0.0.1:$PORT/readyz"
    token=$(seed)
    curl -sf -H "authorization: Bearer $token" \
      "http://127.0.0.1:$PORT/api/v1/timelines/home" >"$WORK/page.json"
    measure "round $round: $bin" "$spid" "http://127.0.0.1:$PORT/api/v1/timelines/home" \
      -H "authorization: Bearer $token"
    kill "$spid"; wait "$spid" 2>/dev/null || true
  done
done
echo "the page: $(wc -c <"$WORK/page.json") bytes"
for mode in "" --memory; do
  $FLOOR --page "$WORK/page.json" --redis-url "redis://127.0.0.1:$RPORT" \
    --listen "127.0.0.1:$PORT" $mode >/dev/null 2>&1 &
  fpid=$!
  wait_up "http://127.0.0.1:$PORT/page"
  measure "read floor ${mode:-(one Redis GET)}" "$fpid" "http://127.0.0.1:$PORT/page"
  kill "$fpid"; wait "$fpid" 2>/dev/null || true
done
