#!/usr/bin/env bash
# The history at ten million events: a selective search's first page and a
# count over all of it. One Redis (port 6561); server A (no history) posts
# 1,000 real statuses holding `zebra`; history_fill appends EVENTS (default
# 10,000,000) synthetic status events to the buffer with those 1,000 spread
# through them (1 in 10,000); server B, started afterwards with a history,
# archives the whole buffer (timed), then each query is timed RUNS (default
# 5) times with curl. Needs ~5 GB of memory for Redis while it runs.
#
#   cargo build --release -p firehose -p firehose-bench && bench/history_10m.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
events=${EVENTS:-10000000}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6561 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6561 --dir "$dir" --save "" --appendonly no --daemonize yes >/dev/null
until redis-cli -p 6561 ping >/dev/null 2>&1; do sleep 0.1; done
start() { # port name [flags...]
  local port=$1 name=$2
  shift 2
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen "127.0.0.1:$port" --redis-url redis://127.0.0.1:6561 \
    --replay-maxlen 20000000 --log-shards 1 "$@" >"$dir/$name.log" 2>&1 &
  pids+=("$!")
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
}
start 8261 a --history 0
target/release/replay_rate --addr 127.0.0.1:8261 --statuses 1000 --rare-every 1 --runs 1 --only none
curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8261/api/v1/users \
  -d '{"login":"searcher","name":"S","email":"searcher@example.com","password":"password123"}' >/dev/null
token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8261/api/v1/sessions \
  -d '{"identifier":"searcher","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
target/release/history_fill --redis-url redis://127.0.0.1:6561 --events "$events" --every 10000 --needle zebra
started=$(date +%s.%N)
start 8262 b --history-dir "$dir/history-b"
held() { curl -s http://127.0.0.1:8262/metrics | awk '/^firehose_history_events / {printf "%d", $2}'; }
until [ "$(held)" -ge "$events" ]; do sleep 1; done
echo "archived $(held) events in $(echo "$(date +%s.%N) - $started" | bc) s; on disk: $(du -sb "$dir/history-b" | cut -f1) bytes"
redis-cli -p 6561 info memory | grep '^used_memory_human'
time_of() { # path
  curl -s -o "$dir/answer" -w '%{time_total}' -H "Authorization: Bearer $token" "http://127.0.0.1:8262$1"
}
for path in "/api/v1/history/search?query=zebra&count=100" \
  "/api/v1/history/search?query=zebra&count=10" \
  "/api/v1/history/counts?query=zebra&bucket=hour" \
  "/api/v1/history/counts?query=filler%20-zebra&bucket=hour"; do
  times=()
  for _ in $(seq "${RUNS:-5}"); do times+=("$(time_of "$path")"); done
  answer=$(head -c 300 "$dir/answer" | tr -d '\n')
  echo "$path: $(printf '%s\n' "${times[@]}" | sort -n | paste -sd' ') s; ${answer:0:120}"
done
