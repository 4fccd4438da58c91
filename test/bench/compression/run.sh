#!/usr/bin/env bash
# run.sh - the compressor filter's gzip throughput beside nginx's gzip, same
# body, same run, on loopback.
#
#   nginx-gzip : wrk -> nginx (gzip on, gzip_comp_level 6) -> upstream nginx
#   outrigger  : wrk -> sidecar (compressor, gzip COMPRESSION_LEVEL_6) -> upstream nginx
#
# Both proxies run alone on CPU $PROXY_CPU with one worker (GOMAXPROCS=1 and
# --concurrency 1 for the sidecar); wrk and the upstream share CPU $LOAD_CPU.
# The body is 64 KiB of the repository's docs (text/plain), served by the
# upstream without compression; every request asks for gzip. The figures are
# requests/s, uncompressed MB/s compressed, the compressed size, and the
# proxy's CPU microseconds per request (from /proc/PID/stat).
#
# Usage: make build && bash test/bench/compression/run.sh
#   env: SIDECAR (default bin/sidecar) REPS (3) DUR (10) CONNS (16) WORK
# Everything listens on 127.0.0.1; every wait is bounded; only the PIDs this
# script started are signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
SIDECAR=${SIDECAR:-$ROOT/bin/sidecar}
REPS=${REPS:-3}
DUR=${DUR:-10}
CONNS=${CONNS:-16}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
WORK=${WORK:-/tmp/compression-bench}
P_UP=18281; P_NGINX=18282; P_OUT=18283
STARTED=()

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() { local p; for p in "${STARTED[@]}"; do stop_pid "$p"; done; }
trap cleanup EXIT
wait_port() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  log "port $1 did not open"; return 1
}
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

command -v nginx >/dev/null || { log "nginx is missing (apt-get install nginx-light)"; exit 1; }
command -v wrk >/dev/null || { log "wrk is missing (apt-get install wrk)"; exit 1; }
[[ -x $SIDECAR ]] || { log "build the sidecar first: make build"; exit 1; }

mkdir -p "$WORK"/{www,run,logs}
cat "$ROOT"/docs/*.md | head -c 65536 > "$WORK/www/body.txt" || true  # head closes the pipe early
SIZE=$(stat -c %s "$WORK/www/body.txt")
temps() { printf 'client_body_temp_path %s/run/%sb; proxy_temp_path %s/run/%sp; fastcgi_temp_path %s/run/%sf; uwsgi_temp_path %s/run/%su; scgi_temp_path %s/run/%ss;' \
  "$WORK" "$1" "$WORK" "$1" "$WORK" "$1" "$WORK" "$1" "$WORK" "$1"; }

cat > "$WORK/upstream.conf" <<EOF
worker_processes 1; master_process off; daemon off;
pid $WORK/run/upstream.pid; error_log $WORK/logs/upstream.err warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 100000000; keepalive_timeout 300s; $(temps u)
  sendfile on; open_file_cache max=16 inactive=300s;
  server {
    listen 127.0.0.1:$P_UP;
    location = /body.txt { default_type text/plain; root $WORK/www; }
  }
}
EOF
cat > "$WORK/nginx-gzip.conf" <<EOF
worker_processes 1; master_process off; daemon off;
pid $WORK/run/nginx-gzip.pid; error_log $WORK/logs/nginx-gzip.err warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 100000000; keepalive_timeout 300s; $(temps p)
  gzip on; gzip_comp_level 6; gzip_types text/plain; gzip_min_length 30; gzip_proxied any;
  upstream up { server 127.0.0.1:$P_UP; keepalive 64; }
  server {
    listen 127.0.0.1:$P_NGINX;
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
EOF
cat > "$WORK/outrigger.yaml" <<EOF
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: bench
    address: {socket_address: {address: 127.0.0.1, port_value: $P_OUT}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: bench
          route_config:
            virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up}}]}]
          http_filters:
          - name: envoy.filters.http.compressor
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor
              response_direction_config: {}
              compressor_library:
                name: text
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
                  compression_level: COMPRESSION_LEVEL_6
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 5s
    load_assignment:
      cluster_name: up
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $P_UP}}}}]}]
EOF

taskset -c "$LOAD_CPU" nginx -c "$WORK/upstream.conf" -p "$WORK" >"$WORK/logs/upstream.out" 2>&1 &
STARTED+=($!); wait_port $P_UP

start() {
  case $1 in
    nginx-gzip) taskset -c "$PROXY_CPU" nginx -c "$WORK/nginx-gzip.conf" -p "$WORK" >"$WORK/logs/nginx-gzip.out" 2>&1 &
      PID=$!; PORT=$P_NGINX ;;
    outrigger) GOMAXPROCS=1 taskset -c "$PROXY_CPU" "$SIDECAR" -c "$WORK/outrigger.yaml" --concurrency 1 \
        --log-level warning --termination-drain-time-s 0 >"$WORK/logs/outrigger.out" 2>&1 &
      PID=$!; PORT=$P_OUT ;;
  esac
  STARTED+=("$PID"); wait_port "$PORT"
}

printf 'target\trep\trequests/s\tMB/s in\tgzip bytes\tCPU us/request\n'
for rep in $(seq 1 "$REPS"); do
  for t in nginx-gzip outrigger; do
    start "$t"
    url="http://127.0.0.1:$PORT/body.txt"
    gz=$(curl -s --max-time 5 -H 'Accept-Encoding: gzip' "$url" | wc -c)
    [[ $(curl -s --max-time 5 --compressed "$url" | cmp - "$WORK/www/body.txt" && echo same) == same ]] || { log "$t: the body does not decode"; exit 1; }
    taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d2s -H 'Accept-Encoding: gzip' "$url" >/dev/null
    c0=$(cpu_ticks "$PID")
    out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DUR}s" -H 'Accept-Encoding: gzip' "$url")
    c1=$(cpu_ticks "$PID")
    rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    awk -v t="$t" -v r="$rep" -v rps="$rps" -v size="$SIZE" -v gz="$gz" -v c="$((c1 - c0))" -v n="$reqs" -v hz="$(getconf CLK_TCK)" \
      'BEGIN { printf "%s\t%d\t%.0f\t%.1f\t%d\t%.0f\n", t, r, rps, rps*size/1e6, gz, c/hz*1e6/n }'
    stop_pid "$PID"
  done
done
