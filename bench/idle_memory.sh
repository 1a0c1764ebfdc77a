#!/usr/bin/env bash
# Idle memory per connection, firehose and Nchan side by side: the same
# client (idle_conns) holds N WebSockets, then N SSE streams, open on each
# server and reads the servers' RSS before and after. firehose serves the
# firehose stream (a `read firehose` token); Nchan (nginx-light with
# libnginx-mod-nchan, one worker, its memory store) one channel. ROUNDS
# (default 2) alternate the two servers; CLIENTS defaults to 5,000.
#
#   apt-get install -y nginx-light libnginx-mod-nchan
#   cargo build --release -p firehose -p firehose-bench && bench/idle_memory.sh
set -euo pipefail
ulimit -n "$(ulimit -Hn)"
bin=${FIREHOSE_BIN:-target/release/firehose}
clients=${CLIENTS:-5000}
dir=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  redis-cli -p 6521 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis-server --port 6521 --dir "$dir" --save "" --daemonize yes >/dev/null
until redis-cli -p 6521 ping >/dev/null 2>&1; do sleep 0.1; done
cat >"$dir/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_nchan_module.so;
worker_processes 1;
worker_rlimit_nofile 19000;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
events { worker_connections 18000; }
http {
  access_log off;
  server {
    listen 127.0.0.1:8222;
    location ~ /sub/(\w+)$ { nchan_subscriber; nchan_channel_id \$1; }
    location ~ /pub/(\w+)$ { nchan_publisher; nchan_channel_id \$1; }
  }
}
CONF
serve() {
  FIREHOSE_RATE_LIMITS=off "$bin" serve --listen 127.0.0.1:8221 --redis-url redis://127.0.0.1:6521 \
    --data-dir "$dir/data" --max-streams-per-user 100000 >"$dir/serve.log" 2>&1 &
  server=$!
  pids+=("$server")
  until curl -sf http://127.0.0.1:8221/readyz >/dev/null; do sleep 0.2; done
}
nchan() {
  nginx -c "$dir/nginx.conf" -p "$dir" -g 'daemon off;' &
  master=$!
  pids+=("$master")
  until curl -s -o /dev/null http://127.0.0.1:8222/; do sleep 0.2; done
  worker=$(pgrep -P "$master" | head -1)
}
serve
curl -sf -H 'content-type: application/json' -d '{"login":"idler","name":"idler","email":"idler@example.com","password":"password123"}' \
  http://127.0.0.1:8221/api/v1/users >/dev/null
uid=$(curl -sf -H 'content-type: application/json' \
  -d '{"identifier":"idler","password":"password123"}' http://127.0.0.1:8221/api/v1/sessions | sed 's/.*"user":{"id":"\([0-9]*\)".*/\1/')
token=$("$bin" token --user "$uid" --scope read --scope firehose --redis-url redis://127.0.0.1:6521 | sed 's/.*"token":"\([^"]*\)".*/\1/')
kill "$server"; wait "$server" 2>/dev/null || true
for round in $(seq "${ROUNDS:-2}"); do
  for transport in ws sse; do
    flag=""
    [[ $transport == ws ]] && flag=--ws
    serve
    echo "-- round $round, $transport, firehose"
    target/release/idle_conns --addr 127.0.0.1:8221 --path /api/v1/stream/firehose --token "$token" \
      $flag --clients "$clients" --pids "$server"
    kill "$server"; wait "$server" 2>/dev/null || true
    nchan
    echo "-- round $round, $transport, Nchan"
    target/release/idle_conns --addr 127.0.0.1:8222 --path /sub/firehose $flag --clients "$clients" \
      --pids "$master,$worker"
    kill "$master"; wait "$master" 2>/dev/null || true
  done
done
