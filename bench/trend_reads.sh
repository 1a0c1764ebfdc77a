#!/usr/bin/env bash
# Trending reads by wrk on a private Redis: GET /api/v1/trends/tags (the
# default window of an hour, top 10) after 200 public posts carrying 40
# hashtags, each build given in turn (give two to compare them side by
# side). Prints reads/s and Redis commands per read (INFO commandstats).
#
#   cargo build --release -p firehose && bench/trend_reads.sh [BINARY ...]
#
# Environment: ROUNDS (default 2), SECONDS_EACH (default 8), REDIS_PORT
# (default 6391), PORT (default 8091).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
SECS=${SECONDS_EACH:-8}
RPORT=${REDIS_PORT:-6391}
PORT=${PORT:-8091}
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(target/release/firehose)
for tool in wrk redis-server redis-cli curl; do
  command -v $tool >/dev/null || { echo "needs $tool (apt-get install wrk redis-server curl)"; exit 2; }
done
WORK=$(mktemp -d)
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null || true
  redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
calls() { redis-cli -p "$RPORT" info commandstats | awk -F'calls=' '/^cmdstat_/ {split($2, a, ","); s += a[1]} END {print s}'; }
for round in $(seq "$ROUNDS"); do
  for bin in "${BINS[@]}"; do
    redis-server --port "$RPORT" --save "" --appendonly no --dir "$WORK" --daemonize yes >/dev/null
    until redis-cli -p "$RPORT" ping >/dev/null 2>&1; do sleep 0.1; done
    FIREHOSE_RATE_LIMITS=off "$bin" serve --listen "127.0.0.1:$PORT" --redis-url "redis://127.0.0.1:$RPORT" >/dev/null 2>&1 &
    SPID=$!
    until curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null; do sleep 0.2; done
    base=http://127.0.0.1:$PORT/api/v1
    curl -sf "$base/users" -H 'content-type: application/json' \
      -d '{"login":"trender","name":"t","email":"t@example.test","password":"password123"}' >/dev/null
    token=$(curl -sf "$base/sessions" -H 'content-type: application/json' \
      -d '{"identifier":"trender","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
    for i in $(seq 200); do
      curl -sf "$base/statuses" -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -d "{\"message\":\"post $i #tag$((i % 40)) #tag$((i % 7))\"}" >/dev/null
    done
    c0=$(calls)
    wrk -t2 -c16 -d"${SECS}s" "$base/trends/tags" >"$WORK/wrk.out" 2>&1
    c1=$(calls)
    n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
    awk -v name="$bin" -v n="$n" -v c=$((c1 - c0)) \
      -v rps="$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")" 'BEGIN {
        printf "round %s  %-28s %8.0f reads/s  %5.1f Redis commands a read\n", '"$round"', name, rps, c / n }'
    kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=
    redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
  done
done
