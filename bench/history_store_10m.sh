#!/usr/bin/env bash
# The shared history at ten million events: a selective search's first page
# and counts on a process with an empty disk (every window fetched from the
# store) against the process that archived them, side by side. One Redis
# (port 6567) and SeaweedFS (ports 6568-6571, +10000); server A (no
# history) posts 1,000 real statuses holding `zebra`; history_fill appends
# EVENTS (default 10,000,000) synthetic status events with those spread
# through them (1 in 10,000); server B (a history in the store) archives
# and seals them all; the buffer is then cut to 1,000 events and server C
# starts with an empty disk. Each
# query is timed RUNS (default 3) times with curl on C (the first cold),
# then on B. Needs ~6 GB of memory while it runs.
#
#   cargo build --release -p firehose -p firehose-bench && bench/history_store_10m.sh
set -euo pipefail
events=${EVENTS:-10000000}
redis_port=6567 s3_port=6568
serve_flags="--replay-maxlen 20000000 --log-shards 1"
# shellcheck source=bench/store_env.sh
. "$(dirname "$0")/store_env.sh"
start 8265 a --history 0
target/release/replay_rate --addr 127.0.0.1:8265 --statuses 1000 --rare-every 1 --runs 1 --only none
curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8265/api/v1/users \
  -d '{"login":"searcher","name":"S","email":"searcher@example.com","password":"password123"}' >/dev/null
token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8265/api/v1/sessions \
  -d '{"identifier":"searcher","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
target/release/history_fill --redis-url redis://127.0.0.1:6567 --events "$events" --every 10000 --needle zebra
started=$(date +%s.%N)
start 8266 b --history-store s3://history/bench
held() { curl -s http://127.0.0.1:8266/metrics | awk '/^firehose_history_events / {printf "%d", $2}'; }
until [ "$(held)" -ge "$events" ]; do sleep 1; done
echo "B archived $(held) events in $(echo "$(date +%s.%N) - $started" | bc) s"
newest=$(redis-cli -p 6567 --scan --pattern 'fh:{e*}:events' |
  while read -r k; do redis-cli -p 6567 xrevrange "$k" + - count 1 | head -1; done | sort -n | tail -1)
until [ "$(redis-cli -p 6567 zscore 'fh:{h}:windows' '~sealed' | cut -d. -f1)" -gt "${newest%%-*}" ] 2>/dev/null; do
  curl -s -o /dev/null -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    http://127.0.0.1:8265/api/v1/statuses -d '{"message":"tick"}'
  sleep 1
done
echo "sealed in $(echo "$(date +%s.%N) - $started" | bc) s: $(redis-cli -p 6567 zcard 'fh:{h}:windows') windows," \
  "$(du -sb "$dir/s3" | cut -f1) bytes in SeaweedFS"
# The buffer lets them go: C's disk can hold only the last 1,000; the rest
# is in the store alone.
redis-cli -p 6567 --scan --pattern 'fh:{e*}:events' | while read -r k; do
  redis-cli -p 6567 xtrim "$k" MAXLEN 1000 >/dev/null
done
start 8267 c --history-store s3://history/bench
time_of() { # port path
  curl -s -o "$dir/answer" -w '%{time_total}' -H "Authorization: Bearer $token" "http://127.0.0.1:$1$2"
}
for port in 8267 8266; do
  for path in "/api/v1/history/search?query=zebra&count=100" \
    "/api/v1/history/search?query=zebra&count=10" \
    "/api/v1/history/counts?query=zebra&bucket=hour"; do
    times=()
    for _ in $(seq "${RUNS:-3}"); do times+=("$(time_of "$port" "$path")"); done
    answer=$(head -c 300 "$dir/answer" | tr -d '\n')
    echo "$port $path: ${times[*]} s; ${answer:0:100}"
  done
done
echo "C's cache: $(du -sb "$dir/history-c/shared" 2>/dev/null | cut -f1) bytes"
