#!/usr/bin/env bash
# History search and counts, two builds side by side: servers A (BEFORE) and
# B (AFTER) on one Redis, each with its own history of the same STATUSES
# (default 60,000) statuses (`replayed status <i> #bench`, one in 100 with the
# word `zebra` too, posted through A), then each query's `counts` timed on A
# and B in turn, RUNS (default 5) times, the median printed. The queries: a
# rule every status matches (`#bench`); `zebra` (in every block, so no block
# can be passed over, and in one status in 100); and 60 numbers ORed, one in
# every ~1,000 statuses (no block passed over, 60 statuses match).
#
#   BEFORE=/tmp/firehose-before AFTER=target/release/firehose bench/history_search.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
before=${BEFORE:?the build to compare against}
after=${AFTER:-target/release/firehose}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6543 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6543 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6543 ping >/dev/null 2>&1; do sleep 0.1; done
start() { # bin port name
  FIREHOSE_RATE_LIMITS=off "$1" serve --listen "127.0.0.1:$2" --redis-url redis://127.0.0.1:6543 \
    --history-dir "$dir/history-$3" --replay-maxlen 200000 >"$dir/$3.log" 2>&1 &
  pids+=("$!")
  until curl -sf "http://127.0.0.1:$2/readyz" >/dev/null; do sleep 0.2; done
}
start "$before" 8243 a
start "$after" 8244 b
target/release/replay_rate --addr 127.0.0.1:8243 --statuses "${STATUSES:-60000}" --rare-every 100 --runs 1 | awk 'NR == 1'
curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8243/api/v1/users \
  -d '{"login":"searcher","name":"S","email":"searcher@example.com","password":"password123"}' >/dev/null
token=$(curl -s -X POST -H 'Content-Type: application/json' http://127.0.0.1:8243/api/v1/sessions \
  -d '{"identifier":"searcher","password":"password123"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
sleep 5
numbers=$(seq 7 1000 59007 | paste -sd' ' | sed 's/ / OR /g')
every=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' "#bench")
word=zebra
numbers=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' "$numbers")
time_of() { # port query
  curl -s -o "$dir/answer" -w '%{time_total}' -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$1/api/v1/history/counts?query=$2&bucket=hour"
}
for name in every word numbers; do
  query=${!name}
  a=() b=()
  for _ in $(seq "${RUNS:-5}"); do
    a+=("$(time_of 8243 "$query")")
    b+=("$(time_of 8244 "$query")")
  done
  total=$(sed 's/.*"total":\([0-9]*\).*/\1/' "$dir/answer")
  median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  echo "$name (total $total): before $(median "${a[@]}") s, after $(median "${b[@]}") s"
done
