#!/usr/bin/env bash
# The {g} slot's ceiling: emit_once.lua (the event step every write sends the
# global slot) on a private Redis with AOF on and three subscribers on the
# channel (three server processes), called over three connections (one per
# process) with k ops of one ~300-byte event each: k = 1 with 16 calls in
# flight per connection (each write its own call, as without the group
# commit, pipelined on the process's connection), and k = 4, 16, 64 with
# one call in flight (store::emitter keeps one, with up to 64 ops).
# Prints Redis CPU per op and ops/s.
#
#   bench/emit_batch.sh [calls per k, default 200000]
# EMIT_SCRIPT=path measures another version of the script (side by side).
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
for _ in 1 2 3; do
  redis-cli -p "$port" subscribe fh:events >/dev/null &
  subs+=($!)
done
sha=$(redis-cli -p "$port" script load "$(cat "${EMIT_SCRIPT:-src/store/writes/lua/emit_once.lua}")")
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
    EVALSHA "$sha" 2 'fh:{g}:emitted' 'fh:{g}:events' 100000 fh:events "${args[@]}" >/dev/null
  end=$(date +%s.%N)
  after=$(cpu)
  redis-cli -p "$port" del 'fh:{g}:emitted' >/dev/null
  awk -v k="$k" -v p="$pipeline" -v n="$n" -v c0="$before" -v c1="$after" -v t0="$start" -v t1="$end" 'BEGIN {
    ops = n * k
    printf "k=%-3d in flight=%-3d %8d ops  %6.2f µs Redis CPU per op  %9.0f ops/s\n", k, p, ops, (c1 - c0) * 1e6 / ops, ops / (t1 - t0)
  }'
done
