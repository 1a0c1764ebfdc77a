#!/usr/bin/env bash
# compress=zstd side by side with plain WebSocket streams:
# 1. bytes per event on the demo world's traffic (`serve --demo`, the
#    dictionary retrained on it every 60 s; the newest 1,000 events
#    replayed to both sockets), every frame decoded;
# 2. bytes per event on the bench template ("load event n" statuses);
# 3. server CPU per delivery, 1,000 WebSocket clients x 100 events/s for
#    15 s, plain and zstd alternating (ROUNDS, default 2).
#
#   cargo build --release -p firehose -p firehose-bench && bench/zstd.sh
set -euo pipefail
bin=${FIREHOSE_BIN:-target/release/firehose}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  for p in 6511 6512; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
redis() { # port
  mkdir -p "$dir/$1"
  redis-server --port "$1" --dir "$dir/$1" --save "" --daemonize yes >/dev/null
  until redis-cli -p "$1" ping >/dev/null 2>&1; do sleep 0.1; done
}
serve() { # port redis-port args...
  local port=$1 rport=$2; shift 2
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen "127.0.0.1:$port" --redis-url "redis://127.0.0.1:$rport" \
    --data-dir "$dir/$rport" --max-streams-per-user 100000 "$@" >"$dir/serve-$port.log" 2>&1 &
  server=$!
  pids+=("$server")
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
}
echo "== the demo world's traffic"
redis 6511
serve 8211 6511 --demo --zstd-retrain-secs 60
# The first socket loads the first dictionary; the retraining a minute
# later learns the world's traffic.
target/release/zstd_ratio --addr 127.0.0.1:8211 --redis-url redis://127.0.0.1:6511 --events 20
sleep 140
target/release/zstd_ratio --addr 127.0.0.1:8211 --redis-url redis://127.0.0.1:6511 --events 1000
echo "== the bench template"
redis 6512
serve 8212 6512
target/release/zstd_ratio --addr 127.0.0.1:8212 --redis-url redis://127.0.0.1:6512 --post 2000
echo "== CPU per delivery, 1,000 WebSocket clients x 100 events/s"
redis_pid=$(pgrep -f 'redis-server.*:6512' | head -1)
for round in $(seq "${ROUNDS:-2}"); do
  for mode in plain zstd; do
    flag=""
    [[ $mode == zstd ]] && flag=--zstd
    echo "-- round $round, $mode"
    target/release/loadgen --addr 127.0.0.1:8212 --redis-url redis://127.0.0.1:6512 --server-pid "$server" \
      --redis-pid "$redis_pid" --clients 1000 --rate 100 --duration 15 --transport ws $flag |
      grep -E 'delivered|CPU|wire bytes|p99' || true
  done
done
