#!/usr/bin/env bash
# A deploy's reconnection storm, measured: 5,000 SSE clients on server A,
# A stopped with SIGTERM, every client going to server B after the delay
# its `disconnect` named. Run once with A's --reconnect-spread at 10 s (the
# default) and once at 0 (no hint: everyone at once); prints each run's
# reconnections per second as B saw them.
#
#   cargo build --release -p firehose -p firehose-bench && bench/reconnect_spread.sh [clients]
set -euo pipefail
clients=${1:-5000}
rport=6397
bin=${FIREHOSE_BIN:-target/release/firehose}
tool=${BENCH_BIN:-target/release/reconnect_spread}
ulimit -n 65536 2>/dev/null || true
redis-server --port "$rport" --save "" --appendonly no --daemonize yes >/dev/null
trap 'kill $(jobs -p) 2>/dev/null || true; redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true' EXIT
serve() { # port spread
  FIREHOSE_RATE_LIMITS=off FIREHOSE_RECONNECT_SPREAD=$2 FIREHOSE_SHUTDOWN_GRACE=30 \
    "$bin" serve --redis-url "redis://127.0.0.1:$rport" --listen "127.0.0.1:$1" >/dev/null 2>&1 &
  echo $!
}
wait_up() { until curl -sf "http://127.0.0.1:$1/readyz" >/dev/null; do sleep 0.2; done; }
for spread in 10 0; do
  a=$(serve 8097 "$spread"); b=$(serve 8098 "$spread")
  wait_up 8097; wait_up 8098
  echo "--reconnect-spread $spread"
  "$tool" --from 127.0.0.1:8097 --to 127.0.0.1:8098 --stop-pid "$a" --clients "$clients" \
    --redis-url "redis://127.0.0.1:$rport" --window 30
  kill "$b" 2>/dev/null || true; wait "$a" "$b" 2>/dev/null || true
done
