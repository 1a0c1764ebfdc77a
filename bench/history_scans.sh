#!/usr/bin/env bash
# Live streams while the history is searched: 1,000 SSE firehose clients at
# 100 events/s for 20 s (loadgen), alone and then while 10 clients each run
# full history scans in a loop (`counts` of a rule every status matches, so
# every block is read and every event judged), ROUNDS (default 2) times.
# The history holds STATUSES (default 60,000) statuses posted first.
#
#   cargo build --release -p firehose -p firehose-bench && bench/history_scans.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6542 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6542 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6542 ping >/dev/null 2>&1; do sleep 0.1; done
FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8242 --redis-url redis://127.0.0.1:6542 \
  --history-dir "$dir/history" --max-streams-per-user 100000 >"$dir/serve.log" 2>&1 &
server=$!
pids+=("$server")
until curl -sf http://127.0.0.1:8242/readyz >/dev/null; do sleep 0.2; done
target/release/replay_rate --addr 127.0.0.1:8242 --statuses "${STATUSES:-60000}" --runs 1 | awk 'NR == 1'
curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8242/api/v1/users \
  -d '{"login":"scanner","name":"S","email":"scanner@example.com","password":"password123"}' >/dev/null
token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8242/api/v1/sessions \
  -d '{"identifier":"scanner","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
scan='http://127.0.0.1:8242/api/v1/history/counts?query=%23bench&bucket=minute'
sleep 5
echo "one scan alone: $(curl -s -o /dev/null -w '%{http_code} in %{time_total} s' -H "Authorization: Bearer $token" "$scan")"
live() {
  target/release/loadgen --addr 127.0.0.1:8242 --redis-url redis://127.0.0.1:6542 --server-pid "$server" \
    --clients 1000 --rate 100 --duration 20 | grep -E 'delivered|server CPU|p99' || true
}
for round in $(seq "${ROUNDS:-2}"); do
  echo "-- round $round, streams alone"
  live
  echo "-- round $round, streams with 10 scanners"
  : >"$dir/scans"
  scanners=()
  for _ in $(seq 10); do
    (
      end=$((SECONDS + 40))
      while [ "$SECONDS" -lt "$end" ]; do
        curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $token" "$scan" >>"$dir/scans"
      done
    ) &
    scanners+=("$!")
  done
  sleep 2
  live
  kill "${scanners[@]}" 2>/dev/null || true
  wait "${scanners[@]}" 2>/dev/null || true
  echo "scans answered: $(cut -d' ' -f1 "$dir/scans" | sort | uniq -c | tr -s ' \n' ' '), median $(cut -d' ' -f2 "$dir/scans" | sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1]}') s"
done
