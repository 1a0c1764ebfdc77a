#!/usr/bin/env bash
# Runs nginx in the foreground with deploy/nginx/firehose.conf in front of
# local firehose processes:
#
#   deploy/nginx/run-local.sh LISTEN_PORT BACKEND [BACKEND...]
#   deploy/nginx/run-local.sh 8080 127.0.0.1:8081 127.0.0.1:8082
#
# Everything nginx writes (config, pid, logs, temp files) goes to a fresh
# directory under /tmp, printed first. tests/faults.rs runs this script
# against two servers.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 LISTEN_PORT BACKEND [BACKEND...]" >&2
    exit 2
fi
port=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/firehose-nginx.XXXXXX)
echo "nginx prefix: $dir"
mkdir -p "$dir/logs" "$dir/temp"
{
    echo "upstream firehose {"
    for backend in "$@"; do
        echo "    server $backend max_fails=1 fail_timeout=5s;"
    done
    echo "    keepalive 64;"
    echo "}"
} > "$dir/upstream.conf"
sed "s/^    listen 8080;/    listen 127.0.0.1:$port;/" "$here/firehose.conf" > "$dir/firehose.conf"
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    include $dir/upstream.conf;
    include $dir/firehose.conf;
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" -t -q
exec nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;'
