# bench/common.sh: what the bench scripts build and start alike (sourced; not run on its own).
# shellcheck shell=bash

# bench_cc SRC CHECKOUT BUILD OUT: compiles the bench program SRC with CHECKOUT's headers (and
# BUILD's generated ones) against BUILD's librein.a and the libraries librein uses, as OUT.
bench_cc() {
  # shellcheck disable=SC2046
  cc -O2 -I"$2/include" -I"$3/include" "$1" "$3/librein.a" \
    $(pkg-config --libs jansson libcurl libmicrohttpd sqlite3 libpcre2-8 yaml-0.1 expat libcrypto) \
    $(pkg-config --libs hiredis 2>/dev/null || true) \
    $(pkg-config --libs libprotobuf-c 2>/dev/null || true) -lpthread -lm -o "$4"
}

# nginx_conf DIR HTTP: writes DIR/nginx.conf, an nginx in the foreground that keeps all its
# files in DIR, logs no requests, and serves HTTP (the http block's upstreams and servers).
nginx_conf() {
  mkdir -p "$1"
  cat >"$1/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
$2
}
EOF
}

# nginx_echo_conf DIR PORT: nginx_conf for an nginx on 127.0.0.1:PORT that answers every
# request with a fixed 200 and the body rein's POST /skills/echo/invoke answers (the
# benchmarks' ceiling of this machine).
nginx_echo_conf() {
  local nginx_port=$2
  nginx_conf "$1" "$(cat <<EOF
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      default_type application/json;
      return 200 '{"ok":true,"tool":"echo","call_id":"call_1","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","output":"hello","meta":{"latency_ms":0}}';
    }
  }
EOF
)"
}
