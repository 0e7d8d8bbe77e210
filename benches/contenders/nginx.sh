#!/bin/sh
# nginx as an HTTP contender for `ringside run http`: one worker, keep-alive, the same
# 13-byte "Hello, World!" body as ringside's servers, no access log, in the foreground.
#
#   ringside run http --contender "http:nginx=benches/contenders/nginx.sh {port}"
#
# Needs nginx (Debian: apt-get install nginx-light). Writes its config and temp files to a
# fresh directory that is removed when nginx exits.
set -eu
port=${1:?usage: nginx.sh PORT}
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx_bin" ] || { echo "nginx.sh: nginx not installed (apt-get install nginx-light)" >&2; exit 127; }
dir=$(mktemp -d /tmp/ringside-nginx.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log stderr warn;
events { worker_connections 16384; multi_accept on; }
http {
    access_log off;
    client_body_temp_path $dir;
    proxy_temp_path $dir;
    fastcgi_temp_path $dir;
    uwsgi_temp_path $dir;
    scgi_temp_path $dir;
    keepalive_timeout 75s;
    keepalive_requests 100000000;
    server_tokens off;
    server {
        listen 127.0.0.1:$port backlog=4096 reuseport;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
CONF
# Not exec: the trap removes the directory after nginx exits (SIGTERM reaches the whole
# process group, nginx included).
"$nginx_bin" -p "$dir" -c "$dir/nginx.conf" &
wait $!
