#!/usr/bin/env bash
# A Python (httpx) consumer catching up over STATUSES (default 60,000)
# statuses from the history: events/s of `since=0` NDJSON, beside the same
# Python line loop over a file of the same bytes and the Rust reader
# (`replay_rate`), for each server binary named (default: this build's), each
# on a fresh Redis, so that two builds compare side by side in one run.
#
#   cargo build --release -p firehose -p firehose-bench && bench/catchup_python.sh [BIN ...]
set -euo pipefail
cd "$(dirname "$0")/.."
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(target/release/firehose)
venv=${VENV:-/tmp/firehose-bench-venv}
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q httpx; }
statuses=${STATUSES:-60000}
for bin in "${bins[@]}"; do
  dir=$(mktemp -d)
  redis-server --port 6544 --dir "$dir" --save "" --daemonize yes >/dev/null
  until redis-cli -p 6544 ping >/dev/null 2>&1; do sleep 0.1; done
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8244 --redis-url redis://127.0.0.1:6544 \
    --history-dir "$dir/history" >"$dir/serve.log" 2>&1 &
  server=$!
  until curl -sf http://127.0.0.1:8244/readyz >/dev/null; do sleep 0.2; done
  echo "== $bin"
  target/release/replay_rate --addr 127.0.0.1:8244 --statuses "$statuses" --runs 3 --only "since=0, track"
  curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8244/api/v1/users \
    -d '{"login":"catcher","name":"C","email":"catcher@example.com","password":"password123"}' >/dev/null
  token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8244/api/v1/sessions \
    -d '{"identifier":"catcher","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
  url='http://127.0.0.1:8244/api/v1/stream/filter?track=replayed&since=0'
  # The same replay's bytes, saved (curl ends it after a quiet second).
  curl -s -N -m 30 -H "Authorization: Bearer $token" -H 'Accept: application/x-ndjson' "$url" \
    --speed-limit 1 --speed-time 1 >"$dir/replay.ndjson" || true
  "$venv/bin/python" bench/catchup_python.py --url "$url" --token "$token" \
    --events "$statuses" --file "$dir/replay.ndjson" --runs 3
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  redis-cli -p 6544 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
done
