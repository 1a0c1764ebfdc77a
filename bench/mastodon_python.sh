#!/usr/bin/env bash
# A Python (httpx) consumer catching up through the Mastodon streaming API
# (`/api/v1/streaming/public?last_event_id=0-0`) and through our own stream
# beneath it (`/api/v1/stream/sample?rate=1&last_event_id=0-0`), over
# STATUSES (default 20,000) statuses of the history, on one server with
# both listeners: events/s of each, side by side in one run.
#
#   cargo build --release --workspace --bins && bench/mastodon_python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-/tmp/firehose-bench-venv}
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q httpx; }
statuses=${STATUSES:-20000}
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; redis-cli -p 6545 shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
redis-server --port 6545 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6545 ping >/dev/null 2>&1; do sleep 0.1; done
FIREHOSE_RATE_LIMITS=off target/release/firehose serve --listen 127.0.0.1:8246 \
  --mastodon-listen 127.0.0.1:8247 --redis-url redis://127.0.0.1:6545 \
  --history-dir "$dir/history" >"$dir/serve.log" 2>&1 &
server=$!
until curl -sf http://127.0.0.1:8246/readyz >/dev/null; do sleep 0.2; done
target/release/replay_rate --addr 127.0.0.1:8246 --statuses "$statuses" --runs 1 --only "since=0, track" | grep posted
curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8246/api/v1/users \
  -d '{"login":"catcher","name":"C","email":"catcher@example.com","password":"password123"}' >/dev/null
token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8246/api/v1/sessions \
  -d '{"identifier":"catcher","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
"$venv/bin/python" bench/mastodon_python.py --base http://127.0.0.1:8246 \
  --mastodon http://127.0.0.1:8247 --token "$token" --events "$statuses" --runs "${RUNS:-3}"
