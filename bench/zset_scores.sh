#!/usr/bin/env bash
# What a timeline's score costs an insert: the microseconds of one ZADD of
# the newest status into 200 timelines of N entries (members 16-digit
# snowflake ids), by how the scores are written:
#   fraction  posted with its milliseconds (what timelines held before
#             2026-11-27), kept as text in a small ZSET's listpack
#   second    the whole second, statuses a third of a second apart (what
#             they hold now: model::timeline_score)
#   tie       the whole second, every entry in the same second (a timeline
#             filled faster than one entry a second, as bench/write_cost.sh's
#             posts fill homes)
# N = 70 is a listpack (the default zset-max-listpack-entries is 128),
# N = 500 a skiplist. Figures are Redis's own (INFO commandstats).
#
#   bench/zset_scores.sh [runs]
set -euo pipefail
runs=${1:-3}
port=6556
dir=$(mktemp -d)
cleanup() {
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port "$port" --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
fill='
local mode, from, to = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local function score(i)
  if mode == "fraction" then return string.format("%.3f", 1795757585 + i * 0.377) end
  if mode == "tie" then return "1795757585" end
  return string.format("%d", 1795757585 + math.floor(i * 0.377))
end
for k = 1, 200 do
  for i = from, to do
    redis.call("ZADD", "t" .. k, score(i), string.format("%d", 1538814710000000 + i * 64))
  end
end'
echo "entries  scores    encoding  µs per ZADD (runs)"
for n in 70 500; do
  for mode in fraction second tie; do
    took=()
    for _ in $(seq "$runs"); do
      redis-cli -p "$port" flushall >/dev/null
      redis-cli -p "$port" eval "$fill" 0 "$mode" 1 "$n" >/dev/null
      redis-cli -p "$port" config resetstat >/dev/null
      redis-cli -p "$port" eval "$fill" 0 "$mode" $((n + 1)) $((n + 20)) >/dev/null
      took+=("$(redis-cli -p "$port" info commandstats | grep '^cmdstat_zadd:' |
        sed 's/.*usec_per_call=\([0-9.]*\).*/\1/')")
    done
    printf '%-8s %-9s %-9s %s\n' "$n" "$mode" "$(redis-cli -p "$port" object encoding t1)" "${took[*]}"
  done
done
