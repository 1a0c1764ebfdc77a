#!/usr/bin/env bash
# Slow consumers beside a live load: loadgen's 1,000 live SSE clients at
# RATE (100) posts a second for DURATION (180) seconds, first alone, then
# beside `lagging`'s SLOW (100) SSE clients reading a tenth of the rate
# (they lag, read on from the history, and catch up once the load ends), on
# one fresh Redis and server each, with a replay buffer of 5,000 events so
# that the laggards read the history on disk. Prints the live latency of
# both runs (compare their p99), the server's peak RSS in each (their
# difference is what the slow clients cost) and what each slow client got.
#
#   cargo build --release -p firehose -p firehose-bench && bench/lagging.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
rate=${RATE:-100}
duration=${DURATION:-180}
slow=${SLOW:-100}
for with in 0 "$slow"; do
  dir=$(mktemp -d)
  redis-server --port 6546 --dir "$dir" --save "" --daemonize yes >/dev/null
  until redis-cli -p 6546 ping >/dev/null 2>&1; do sleep 0.1; done
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8246 --redis-url redis://127.0.0.1:6546 \
    --history-dir "$dir/history" --replay-maxlen 5000 --max-streams-per-user 100000 \
    >"$dir/serve.log" 2>&1 &
  server=$!
  until curl -sf http://127.0.0.1:8246/readyz >/dev/null; do sleep 0.2; done
  # The server's peak RSS, sampled every second.
  (peak=0; while kill -0 "$server" 2>/dev/null; do
     rss=$(awk '/VmRSS/ {print $2}' /proc/"$server"/status 2>/dev/null || echo 0)
     [ "${rss:-0}" -gt "$peak" ] && peak=$rss && echo "$peak" >"$dir/peak"
     sleep 1; done) &
  echo "== $with slow clients beside 1,000 live ones, $rate posts/s for ${duration}s"
  laggards=
  if [ "$with" -gt 0 ]; then
    target/release/lagging --addr 127.0.0.1:8246 --redis-url redis://127.0.0.1:6546 \
      --server-pid "$server" --clients "$with" --rate "$rate" --duration "$duration" &
    laggards=$!
    sleep 3
  fi
  target/release/loadgen --addr 127.0.0.1:8246 --redis-url redis://127.0.0.1:6546 \
    --server-pid "$server" --mode post --clients 1000 --rate "$rate" --duration "$duration" \
    | grep -E "delivered|latency|server CPU:"
  [ -n "$laggards" ] && wait "$laggards"
  echo "server peak RSS: $(cat "$dir/peak") KiB"
  curl -s http://127.0.0.1:8246/metrics | grep -E "^firehose_(streams_lagging|streams_caught_up|stall_disconnects)_total" || true
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  redis-cli -p 6546 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
done
