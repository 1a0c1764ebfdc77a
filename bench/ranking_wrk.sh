#!/usr/bin/env bash
# order=top beside order=latest, read with wrk on one release server:
# a reader whose home holds 1,000 entries (20 followed authors x 50
# statuses, all tagged #hot, some liked), and the #hot tag timeline of the
# same 1,000. Prints requests/s for each of the four reads.
#
#   cargo build --release && bench/ranking_wrk.sh [port] [redis-port]
set -euo pipefail
port=${1:-8095}
rport=${2:-6395}
bin=${FIREHOSE_BIN:-target/release/firehose}
redis-server --port "$rport" --save "" --appendonly no --daemonize yes >/dev/null
trap 'kill "$srv" 2>/dev/null; redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true' EXIT
FIREHOSE_RATE_LIMITS=off "$bin" serve --redis-url "redis://127.0.0.1:$rport" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
srv=$!
base="http://127.0.0.1:$port"
until curl -sf "$base/healthz" >/dev/null; do sleep 0.2; done
token_of() {
  curl -sf -X POST "$base/api/v1/users" -H 'content-type: application/json' \
    -d "{\"login\":\"$1\",\"name\":\"$1\",\"email\":\"$1@example.test\",\"password\":\"password123\"}" >/dev/null
  curl -sf -X POST "$base/api/v1/sessions" -H 'content-type: application/json' \
    -d "{\"identifier\":\"$1\",\"password\":\"password123\"}" | sed 's/.*"token":"\([^"]*\)".*/\1/'
}
reader=$(token_of reader)
for a in $(seq 1 20); do
  t=$(token_of "author$a")
  id=$(curl -sf "$base/api/v1/me" -H "authorization: Bearer $t" | sed 's/.*"id":"\([0-9]*\)".*/\1/')
  curl -sf -X POST "$base/api/v1/users/$id/follow" -H "authorization: Bearer $reader" >/dev/null
  for i in $(seq 1 50); do
    sid=$(curl -sf -X POST "$base/api/v1/statuses" -H "authorization: Bearer $t" \
      -H 'content-type: application/json' -d "{\"message\":\"status $i of $a #hot\"}" |
      sed 's/.*"id":"\([0-9]*\)".*/\1/')
    if (( i % 7 == 0 )); then
      curl -sf -X POST "$base/api/v1/statuses/$sid/like" -H "authorization: Bearer $reader" >/dev/null
    fi
  done
done
sleep 1
for path in "/api/v1/timelines/home?count=30" "/api/v1/timelines/home?count=30&order=top" \
            "/api/v1/timelines/tag/hot?count=30" "/api/v1/timelines/tag/hot?count=30&order=top"; do
  rps=$(wrk -t2 -c32 -d10s -H "authorization: Bearer $reader" "$base$path" | awk '/Requests\/sec/ {print $2}')
  echo "$path: $rps requests/s"
done
