#!/usr/bin/env bash
# System calls and CPU per proxied HTTP/1.1 request (issue #19): each
# sidecar given (peers bootstrap: one listener, the router, one STATIC
# host; --concurrency 1, GOMAXPROCS=1, pinned to CPU 0) in front of one
# nginx serving 128 bytes (one worker, CPU 1), under wrk (one thread, 64
# keep-alive connections, CPU 1), the binaries in turns within each
# repetition. Per request it prints the reads and writes the sidecar made
# (/proc/PID/io syscr/syscw: read and write only, recvmsg is not counted
# there) and its user+system CPU time (/proc/PID/stat); in strace mode it
# also attaches `strace -c -f` for the measured run and prints its counts
# per request (strace slows the sidecar: read those for which calls are
# made, not for the CPU).
#
#   test/bench/h1syscalls/run.sh io|strace path/to/sidecar [path/to/other ...]
#   env: DUR (5s) REPS (3) CONNS (64)
#
# Needs nginx, wrk, taskset, python3 (and strace for the strace mode).
# Every listener is on 127.0.0.1 with a port the kernel chose; only the
# processes this script started are signalled.
set -euo pipefail
MODE=$1; shift
DUR=${DUR:-5s}; REPS=${REPS:-3}; CONNS=${CONNS:-64}
DIR=$(mktemp -d); chmod 755 "$DIR"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
mkdir -p $DIR/www $DIR/tmp; head -c 128 /dev/zero | tr '\0' b > $DIR/www/128
UP=$(freeport)
cat > $DIR/up.conf <<E2
worker_processes 1; master_process off; daemon off; pid $DIR/up.pid; error_log $DIR/up.err warn;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path $DIR/tmp; proxy_temp_path $DIR/tmp; fastcgi_temp_path $DIR/tmp; uwsgi_temp_path $DIR/tmp; scgi_temp_path $DIR/tmp;
 keepalive_requests 100000000; keepalive_timeout 300s; sendfile on; default_type application/octet-stream;
 server { listen 127.0.0.1:$UP backlog=4096; root $DIR/www; } }
E2
taskset -c 1 nginx -c $DIR/up.conf -e $DIR/up.err & PIDS+=($!)
declare -A PORT PID
i=0
for b in "$@"; do
  i=$((i+1)); port=$(freeport); PORT[$i]=$port
  cat > $DIR/s$i.yaml <<E3
static_resources:
  listeners:
  - name: bench
    address: {socket_address: {address: 127.0.0.1, port_value: $port}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: bench
          codec_type: AUTO
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: up}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 5s
    load_assignment:
      cluster_name: up
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UP}}}
E3
  GOMAXPROCS=1 taskset -c 0 $b -c $DIR/s$i.yaml --concurrency 1 --log-level warning --disable-hot-restart > $DIR/s$i.log 2>&1 & PID[$i]=$!; PIDS+=($!)
  wait_port $port
done
HZ=$(getconf CLK_TCK)
N=$i
for rep in $(seq $REPS); do
 for i in $(seq $N); do
  p=${PID[$i]}
  taskset -c 1 wrk -t1 -c$CONNS -d1s http://127.0.0.1:${PORT[$i]}/128 >/dev/null
  if [[ $MODE == strace ]]; then
    strace -c -f -p $p -o $DIR/st$i.$rep 2>/dev/null & SP=$!; sleep 0.5
  fi
  r0=$(awk '/syscr/{print $2}' /proc/$p/io); w0=$(awk '/syscw/{print $2}' /proc/$p/io); c0=$(awk '{print $14+$15}' /proc/$p/stat)
  out=$(taskset -c 1 wrk -t1 -c$CONNS -d$DUR http://127.0.0.1:${PORT[$i]}/128)
  r1=$(awk '/syscr/{print $2}' /proc/$p/io); w1=$(awk '/syscw/{print $2}' /proc/$p/io); c1=$(awk '{print $14+$15}' /proc/$p/stat)
  if [[ $MODE == strace ]]; then kill -INT $SP; wait $SP 2>/dev/null || true; fi
  req=$(echo "$out" | awk '/requests in/{print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  errs=$(echo "$out" | grep -c 'Non-2xx\|Socket errors' || true)
  python3 -c "
req=$req; print('rep $rep bin $i (%s) load %s: req/s %s, reads/req %.2f, writes/req %.2f, CPU us/req %.2f errs $errs' % ('$(basename ${@:$i:1})', open('/proc/loadavg').read().split()[0], '$rps', ($r1-$r0)/req, ($w1-$w0)/req, ($c1-$c0)/$HZ*1e6/req))"
  if [[ $MODE == strace ]]; then echo "  strace (req $req):"; awk -v req=$req 'NR>2 && $NF!="total" && $4 ~ /^[0-9]+$/ {err=($5 ~ /^[0-9]+$/)?$5:0; name=($5 ~ /^[0-9]+$/)?$6:$5; printf "    %-14s %7.3f/req errors %7.3f/req\n", name, $4/req, err/req}' $DIR/st$i.$rep | sort -k2 -nr | head -8; fi
 done
done
