#!/usr/bin/env bash
# Redis commands and CPU per write (follow, post, like, sign-up, login) on
# one Redis and on a 3-master cluster, the same workload on each:
# 300 users each following 10, 2,000 posts, 2,000 likes, 16 clients.
# AOF on (everysec), as the embedded Redis runs. `replicas`: 3 masters with
# a replica each, the workload once through a server that answers at once
# and once through one that waits for a replica (--redis-wait-replicas 1),
# side by side: the price of writes that survive a failover.
#
#   cargo build --release -p firehose -p firehose-bench && bench/write_cost.sh [one|cluster|both|replicas]
#
# WRITE_COST_ARGS=--breakdown prints the microseconds per command per write
# (and --hashtags 64 spreads the posts' tags, where by default all carry one);
# REDIS_ARGS are passed to every redis-server (e.g. a Redis setting to weigh);
# MASTERS=6 sets the cluster's masters (3 by default, at most 6);
# G_WEIGHT=0.75 gives the master that owns {g} that weight in the cluster's
# slots (`redis-cli --cluster rebalance --cluster-weight`), the others 1.
set -euo pipefail
mode=${1:-both}
bin=${FIREHOSE_BIN:-target/release/firehose}
tool=${BENCH_BIN:-target/release/write_cost}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  for p in 6401 7101 7102 7103 7104 7105 7106; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
redis() { # port [cluster]
  mkdir -p "$dir/$1"
  redis-server --port "$1" --dir "$dir/$1" --appendonly yes --save "" --daemonize yes ${REDIS_ARGS:-} \
    ${2:+--cluster-enabled yes --cluster-config-file nodes.conf --repl-diskless-sync-delay 0} >/dev/null
  until redis-cli -p "$1" ping >/dev/null 2>&1; do sleep 0.1; done
}
serve() { # port redis-args...
  local port=$1; shift
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
  pids+=($!)
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
}
if [[ $mode == one || $mode == both ]]; then
  echo "== one Redis"
  redis 6401
  serve 8101 --redis-url redis://127.0.0.1:6401
  "$tool" --url http://127.0.0.1:8101 --nodes redis://127.0.0.1:6401 ${WRITE_COST_ARGS:-}
fi
if [[ $mode == cluster || $mode == both ]]; then
  masters=${MASTERS:-3}
  ports=$(seq 7101 $((7100 + masters)))
  echo "== $masters-master cluster"
  for p in $ports; do redis "$p" cluster; done
  # shellcheck disable=SC2046
  redis-cli --cluster create $(printf '127.0.0.1:%s ' $ports) --cluster-replicas 0 --cluster-yes >/dev/null
  until redis-cli -p 7101 cluster info | grep -q 'cluster_state:ok'; do sleep 0.2; done
  if [[ -n ${G_WEIGHT:-} ]]; then
    # The master that owns {g} gets a share of the slots weighted G_WEIGHT
    # against 1 for the others (docs/operations.md, *The {g} master*).
    slot=$(redis-cli -p 7101 cluster keyslot '{g}')
    owner=$(redis-cli -p 7101 cluster nodes | awk -v s="$slot" '{
      for (i = 9; i <= NF; i++) { n = split($i, r, "-"); if (n == 1) r[2] = r[1]; if (s >= r[1] + 0 && s <= r[2] + 0) print $1 } }')
    redis-cli --cluster rebalance 127.0.0.1:7101 --cluster-weight "$owner=$G_WEIGHT" --cluster-yes >/dev/null
    until redis-cli --cluster check 127.0.0.1:7101 2>/dev/null | grep -q 'All 16384 slots covered'; do sleep 0.2; done
    redis-cli --cluster info 127.0.0.1:7101 2>/dev/null | grep slots | sed 's/^/  /'
  fi
  nodes=$(printf 'redis://127.0.0.1:%s\n' $ports | paste -sd,)
  serve 8102 --redis-cluster "$nodes"
  "$tool" --url http://127.0.0.1:8102 --nodes "$nodes" ${WRITE_COST_ARGS:-}
fi
if [[ $mode == replicas ]]; then
  echo "== 3 masters with a replica each"
  for p in 7101 7102 7103 7104 7105 7106; do redis "$p" cluster; done
  redis-cli --cluster create 127.0.0.1:71{01,02,03,04,05,06} --cluster-replicas 1 --cluster-yes >/dev/null
  until [[ $(for p in 7101 7102 7103 7104 7105 7106; do redis-cli -p "$p" info replication; done |
    grep -c 'master_link_status:up') == 3 ]]; do sleep 0.2; done
  nodes=redis://127.0.0.1:7101,redis://127.0.0.1:7102,redis://127.0.0.1:7103
  masters=$(for p in 7101 7102 7103 7104 7105 7106; do
    if redis-cli -p "$p" info replication | grep -q role:master; then echo "redis://127.0.0.1:$p"; fi
  done | paste -sd,)
  serve 8103 --redis-cluster "$nodes"
  serve 8104 --redis-cluster "$nodes" --redis-wait-replicas 1
  echo "-- answered at once"
  "$tool" --url http://127.0.0.1:8103 --nodes "$masters"
  echo "-- answered once a replica holds the write"
  "$tool" --url http://127.0.0.1:8104 --nodes "$masters"
fi
