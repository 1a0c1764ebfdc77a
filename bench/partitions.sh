#!/usr/bin/env bash
# Partitioned firehose against unpartitioned, per delivery: CLIENTS (default
# 250) unpartitioned firehose clients, then CLIENTS sets of N (default 4)
# partitioned clients (partition=k&partitions=N, k = 1..N), the same number
# of deliveries per event either way, RATE (default 100) events a second for
# 15 s; SSE and WebSocket, ROUNDS (default 2) alternating, one server.
#
#   cargo build --release -p firehose -p firehose-bench && bench/partitions.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
clients=${CLIENTS:-250}
n=${N:-4}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6541 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6541 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6541 ping >/dev/null 2>&1; do sleep 0.1; done
FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8241 --redis-url redis://127.0.0.1:6541 \
  --data-dir "$dir/data" --max-streams-per-user 100000 >"$dir/serve.log" 2>&1 &
server=$!
pids+=("$server")
until curl -sf http://127.0.0.1:8241/readyz >/dev/null; do sleep 0.2; done
for round in $(seq "${ROUNDS:-2}"); do
  for transport in sse ws; do
    for parts in 1 "$n"; do
      echo "-- round $round, $transport, partitions $parts"
      target/release/loadgen --addr 127.0.0.1:8241 --redis-url redis://127.0.0.1:6541 --server-pid "$server" \
        --transport "$transport" --clients $((clients * parts)) --partitions "$parts" \
        --rate "${RATE:-100}" --duration 15 | grep -E 'delivered|server CPU|p99' || true
    done
  done
done
