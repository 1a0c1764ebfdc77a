#!/usr/bin/env bash
# A celebrity's post: LIKERS (default 10,000) distinct users like one status
# at RATE a second (default 10,000 a minute) while its author's user stream
# is open (AUTHORS=100: the same likes spread over 100 authors' posts, to
# compare with); one Redis, AOF on (everysec), as the embedded Redis runs.
#
#   cargo build --release -p firehose -p firehose-bench && bench/celebrity.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6561 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6561 --dir "$dir" --appendonly yes --save "" --daemonize yes >/dev/null
until redis-cli -p 6561 ping >/dev/null 2>&1; do sleep 0.1; done
FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8261 --redis-url redis://127.0.0.1:6561 \
  --data-dir "$dir/data" >"$dir/serve.log" 2>&1 &
pids+=($!)
until curl -sf http://127.0.0.1:8261/readyz >/dev/null; do sleep 0.2; done
target/release/celebrity --addr 127.0.0.1:8261 --redis-url redis://127.0.0.1:6561 \
  --likers "${LIKERS:-10000}" --rate "${RATE:-166.67}" --authors "${AUTHORS:-1}"
