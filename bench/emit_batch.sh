#!/usr/bin/env bash
# The log's ceiling on one core: emit_once.lua (the event step a write sends
# its shard of the event log; before the sharded log, the one global slot
# `{g}` every write sent) on a private Redis with AOF on and three
# subscribers on the channel (three server processes), called over three
# connections (one per process) with k ops of one ~300-byte event each:
# k = 1 with 16 calls in flight per connection (each write its own call,
# pipelined on the process's connection), and k = 4, 16, 64 with one call
# in flight (store::emitter keeps one a shard, with up to 64 ops).
# Prints Redis CPU per op and ops/s: one shard on one core. With the sharded
# log every master takes its shards' share, so N masters take N times it.
#
#   bench/emit_batch.sh [calls per k, default 200000]
# EMIT_SCRIPT=path measures another version of the script (side by side):
# one that calls log_append (the sharded log) is sent with log_append.lua
# (LOG_APPEND=path, this tree's by default) and the shard's arguments; one
# that does not, with the one-stream layout's.
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-200000}
port=${REDIS_PORT:-6395}
dir=$(mktemp -d)
subs=()
cleanup() {
  kill "${subs[@]}" 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port "$port" --dir "$dir" --appendonly yes --save "" --daemonize yes >/dev/null
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
script=${EMIT_SCRIPT:-src/store/writes/lua/emit_once.lua}
if grep -q log_append "$script"; then
  source=$(cat "${LOG_APPEND:-src/store/writes/lua/log_append.lua}" "$script")
  keys=('fh:{e0}:emitted' 'fh:{e0}:events')
  fixed=('~100000' 'fh:{e0}:live' PUBLISH 0 '')
  channel='fh:{e0}:live'
else
  source=$(cat "$script")
  keys=('fh:{g}:emitted' 'fh:{g}:events')
  fixed=(100000 fh:events)
  channel=fh:events
fi
for _ in 1 2 3; do
  redis-cli -p "$port" subscribe "$channel" >/dev/null &
  subs+=($!)
done
sha=$(redis-cli -p "$port" script load "$source")
event='{"type":"status","at":1795745420.62,"status":{"id":"1538764884460672","uid":"1","login":"user1","message":"a status of a typical length, about one hundred and forty characters of text, some of it #tagged and @mentioning","posted":1795745420.62,"hashtags":["tagged"],"mentions":[]}}'
cpu() { redis-cli -p "$port" info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
for kp in 1:16 4:1 16:1 64:1; do
  k=${kp%:*} pipeline=${kp#*:}
  args=()
  for _ in $(seq "$k"); do args+=("__rand_int__" 1 "$event"); done
  n=$((calls / k))
  before=$(cpu)
  start=$(date +%s.%N)
  redis-benchmark -p "$port" -n "$n" -c 3 -P "$pipeline" -r 1000000000 -q \
    EVALSHA "$sha" 2 "${keys[@]}" "${fixed[@]}" "${args[@]}" >/dev/null
  end=$(date +%s.%N)
  after=$(cpu)
  redis-cli -p "$port" del "${keys[0]}" >/dev/null
  awk -v k="$k" -v p="$pipeline" -v n="$n" -v c0="$before" -v c1="$after" -v t0="$start" -v t1="$end" 'BEGIN {
    ops = n * k
    printf "k=%-3d in flight=%-3d %8d ops  %6.2f µs Redis CPU per op  %9.0f ops/s\n", k, p, ops, (c1 - c0) * 1e6 / ops, ops / (t1 - t0)
  }'
done
