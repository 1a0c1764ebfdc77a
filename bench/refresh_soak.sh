#!/usr/bin/env bash
# Tokens refreshed on live WebSockets: CLIENTS (default 1,000) firehose
# WebSockets, each on a session of its own whose token lives 90 s, each
# logging in again and sending {"type":"refresh","token"} every 60 s
# (staggered), for DURATION seconds (default 600) while RATE events a second
# (default 100) are published. Without the refreshes every stream would
# end with `expired` after 90 s. Prints events delivered and lost, the
# refreshes sent and answered, and the sockets that ended early (each a
# reconnect a client would have had to make).
#
#   cargo build --release -p firehose -p firehose-bench && bench/refresh_soak.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6531 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6531 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6531 ping >/dev/null 2>&1; do sleep 0.1; done
FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8231 --redis-url redis://127.0.0.1:6531 \
  --data-dir "$dir/data" --max-streams-per-user 100000 >"$dir/serve.log" 2>&1 &
server=$!
pids+=("$server")
until curl -sf http://127.0.0.1:8231/readyz >/dev/null; do sleep 0.2; done
target/release/loadgen --addr 127.0.0.1:8231 --redis-url redis://127.0.0.1:6531 --server-pid "$server" \
  --transport ws --clients "${CLIENTS:-1000}" --rate "${RATE:-100}" --duration "${DURATION:-600}" \
  --refresh-secs 60 --token-ttl 90
echo "server log: $(grep -c -i 'error\|panic' "$dir/serve.log" || true) error lines"
