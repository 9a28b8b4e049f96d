#!/bin/sh
# Writes samples of nginx's access log (the default "combined" format) and error log with the
# real nginx (Debian's nginx-light): a 200, a 404 (open() failed in the error log), a 502 from
# an upstream that refuses connections, and the notices of start and stop.
# usage: nginx_logs.sh OUTDIR   (needs nginx and curl; uses 127.0.0.1:18491)
set -eu
out=$1
tmp=$(mktemp -d)
mkdir -p "$tmp/html" "$out/nginx_access" "$out/nginx_error"
echo ok > "$tmp/html/index.html"
cat > "$tmp/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/error.log notice;
events { worker_connections 64; }
http {
    access_log $tmp/access.log combined;
    client_body_temp_path $tmp;
    proxy_temp_path $tmp;
    fastcgi_temp_path $tmp;
    uwsgi_temp_path $tmp;
    scgi_temp_path $tmp;
    server {
        listen 127.0.0.1:18491;
        server_name localhost;
        root $tmp/html;
        location /api/ { proxy_pass http://127.0.0.1:1; }
    }
}
CONF
nginx -c "$tmp/nginx.conf" -p "$tmp" &
pid=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null http://127.0.0.1:18491/ && break; sleep 0.2; done
curl -s -o /dev/null -A 'Mozilla/5.0 (X11; Linux x86_64)' -e 'http://example.com/start' http://127.0.0.1:18491/index.html
curl -s -o /dev/null http://127.0.0.1:18491/missing.png
curl -s -o /dev/null -X POST -d 'a=1' http://127.0.0.1:18491/api/orders
kill "$pid"
wait "$pid" || true
cp "$tmp/access.log" "$out/nginx_access/input"
cp "$tmp/error.log" "$out/nginx_error/input"
rm -rf "$tmp"
