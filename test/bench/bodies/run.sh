#!/usr/bin/env bash
# Body sizes beside haproxy and nginx (issue #19): HTTP/1.1 keep-alive
# through each proxy to one nginx upstream, for 128 B, 16 KiB, 64 KiB and
# 1 MiB response bodies (../shared/bench/peers.sh serves only the first
# two), and POSTs of 64 KiB and 1 MiB request bodies (a 2-byte answer;
# nginx with proxy_request_buffering off, so that it streams them as the
# others do). The conditions are peers.sh's: each proxy with one worker
# pinned to CPU 0 (haproxy nbthread 1 with http-reuse always, nginx one worker
# with upstream keep-alive, the sidecar --concurrency 1 and GOMAXPROCS=1),
# wrk (one thread) and the upstream nginx (one worker, sendfile) on CPU 1.
# Every proxy runs for the whole benchmark and the runs are interleaved
# (rep, size, proxy), so a drift in the machine's load touches all alike.
#
# For each run it records requests/s and the proxy's CPU time per request
# (user+system from /proc/PID/stat, the master's and workers' for nginx,
# over the measured run): on a shared machine the second is the steadier
# figure. It prints the medians, the run-to-run spread of requests/s
# ((max-min)/median) and the ratios to the best of haproxy and nginx.
# It also records the proxy's read and write system calls per request
# (/proc/PID/io syscr/syscw: read and write, not recvmsg or sendmsg);
# with STRACE=1, `strace -c -f` watches each sidecar's measured runs and
# its counts per request are printed after each (strace slows the
# sidecar: read those for which calls are made, not for the CPU).
#
#   test/bench/bodies/run.sh path/to/sidecar [path/to/base/sidecar]
#   env: REPS (3) DUR (5s) WARM (1s) CONNS (64) SIZES ("128 16384 65536 1048576")
#        STRACE (empty; 1 to count each sidecar's system calls with strace)
#        POSTS ("65536 1048576"; "" for none)
#        OUT (a directory to keep the raw results in)
#
# Needs nginx, haproxy, wrk, taskset and python3 (the Makefile's
# bench-bodies target installs the first three). Every listener is on
# 127.0.0.1 with a port the kernel chose; only the processes this script
# started are signalled.
set -euo pipefail
SIDECAR=$(realpath "${1:?usage: run.sh path/to/sidecar [path/to/base/sidecar]}")
BASE=${2:+$(realpath "$2")}
REPS=${REPS:-3}
DUR=${DUR:-5s}
WARM=${WARM:-1s}
CONNS=${CONNS:-64}
SIZES=${SIZES:-"128 16384 65536 1048576"}
POSTS=${POSTS-"65536 1048576"}
DIR=$(mktemp -d)
chmod 755 "$DIR" # nginx's workers may run as another user
PIDS=()
cleanup() {
	# TERM, not INT: a non-interactive shell starts background jobs with
	# SIGINT ignored, and haproxy keeps that disposition, so INT left it
	# running and the wait below waited for ever.
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${OUT:-} ]]; then mkdir -p "$OUT" && cp "$DIR"/results.tsv "$OUT"/ 2>/dev/null || true; fi
	rm -rf "$DIR"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; return 1; }
cpu_ticks() { # utime+stime of a PID and its children (an nginx master's workers)
	local sum c
	sum=$(awk '{print $14+$15}' "/proc/$1/stat")
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		sum=$((sum + $(awk '{print $14+$15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
	done
	echo "$sum"
}
HZ=$(getconf CLK_TCK)

# The upstream: one file per size, served with sendfile on keep-alive
# connections.
mkdir -p "$DIR/www" "$DIR/tmp"
for n in $SIZES; do head -c "$n" /dev/zero | tr '\0' 'b' >"$DIR/www/$n"; done
# POST bodies: a wrk script per size; the upstream reads and drops them.
for n in $POSTS; do printf 'wrk.method = "POST"\nwrk.body = string.rep("p", %d)\n' "$n" >"$DIR/post-$n.lua"; done
UP=$(freeport)
cat >"$DIR/upstream.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $DIR/upstream.pid;
error_log $DIR/upstream.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $DIR/tmp; proxy_temp_path $DIR/tmp;
  fastcgi_temp_path $DIR/tmp; uwsgi_temp_path $DIR/tmp; scgi_temp_path $DIR/tmp;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  open_file_cache max=16 inactive=300s;
  sendfile on; tcp_nopush on;
  default_type application/octet-stream;
  # /post reads the whole body (in memory) before it answers, through a
  # proxy_pass to itself: a bare return would answer first and close the
  # connection on the proxy still sending.
  client_max_body_size 0;
  client_body_buffer_size 2m;
  server {
    listen 127.0.0.1:$UP backlog=4096;
    root $DIR/www;
    location = /post { proxy_pass http://127.0.0.1:$UP/ok; proxy_set_header Content-Length ""; proxy_pass_request_body off; }
    location = /ok { return 200 ok; }
  }
}
EOF
taskset -c 1 nginx -c "$DIR/upstream.conf" -e "$DIR/upstream.err" &
PIDS+=($!)

declare -A PORT PID
TARGETS=(haproxy nginx outrigger)
PORT[haproxy]=$(freeport)
cat >"$DIR/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 300s
  option forwardfor
  http-reuse always
frontend fe
  bind 127.0.0.1:${PORT[haproxy]}
  default_backend be
backend be
  server up 127.0.0.1:$UP
EOF
taskset -c 0 haproxy -db -f "$DIR/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
PID[haproxy]=$!
PIDS+=($!)

PORT[nginx]=$(freeport)
cat >"$DIR/nginx-proxy.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $DIR/nginx-proxy.pid;
error_log $DIR/nginx-proxy.err warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $DIR/tmp; proxy_temp_path $DIR/tmp;
  fastcgi_temp_path $DIR/tmp; uwsgi_temp_path $DIR/tmp; scgi_temp_path $DIR/tmp;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  upstream up { server 127.0.0.1:$UP; keepalive 256; keepalive_requests 100000000; keepalive_timeout 300s; }
  server {
    listen 127.0.0.1:${PORT[nginx]} backlog=4096;
    client_max_body_size 0;
    location / {
      proxy_request_buffering off;
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    }
  }
}
EOF
taskset -c 0 nginx -c "$DIR/nginx-proxy.conf" -e "$DIR/nginx-proxy.err" &
PID[nginx]=$!
PIDS+=($!)

# sidecar name binary: the peers bootstrap (one listener, a router, one
# STATIC host).
sidecar() {
	local port
	port=$(freeport)
	PORT[$1]=$port
	cat >"$DIR/$1.yaml" <<EOF
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
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
EOF
	GOMAXPROCS=1 taskset -c 0 "$2" -c "$DIR/$1.yaml" --concurrency 1 --log-level warning --disable-hot-restart \
		>"$DIR/$1.log" 2>&1 &
	PID[$1]=$!
	PIDS+=($!)
}
sidecar outrigger "$SIDECAR"
if [[ -n $BASE ]]; then
	sidecar outrigger-base "$BASE"
	TARGETS+=(outrigger-base)
fi
wait_port "$UP"
for t in "${TARGETS[@]}"; do wait_port "${PORT[$t]}"; done

# run rep target size: one warm-up and one measured wrk run; a size
# post-N POSTs N bytes.
run() {
	local url="http://127.0.0.1:${PORT[$2]}/$3" before after out reqs secs script=() io0 io1 tracer=
	local pid=${PID[$2]}
	if [[ $3 == post-* ]]; then
		url="http://127.0.0.1:${PORT[$2]}/post"
		script=(-s "$DIR/$3.lua")
	fi
	taskset -c 1 timeout 60 wrk -t1 -c"$CONNS" -d"$WARM" "${script[@]}" "$url" >/dev/null
	if [[ -n ${STRACE:-} && $2 == outrigger* ]]; then
		strace -c -f -p "$pid" -o "$DIR/strace" 2>/dev/null &
		tracer=$!
		sleep 0.5
	fi
	io0=$(awk '/^syscr|^syscw/ {printf "%s ", $2}' "/proc/$pid/io")
	before=$(cpu_ticks "$pid")
	out=$(taskset -c 1 timeout 120 wrk -t1 -c"$CONNS" -d"$DUR" "${script[@]}" "$url")
	after=$(cpu_ticks "$pid")
	io1=$(awk '/^syscr|^syscw/ {printf "%s ", $2}' "/proc/$pid/io")
	if [[ -n $tracer ]]; then
		kill -INT "$tracer"
		wait "$tracer" 2>/dev/null || true
	fi
	if grep -qE "Non-2xx|Socket errors" <<<"$out"; then
		echo "$2 /$3: wrk saw errors:" >&2
		echo "$out" >&2
		exit 1
	fi
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	secs=$(awk '/requests in/ {sub(/s,/, "", $4); print $4}' <<<"$out")
	awk -v r="$1" -v t="$2" -v z="$3" -v d=$((after - before)) -v n="$reqs" -v s="$secs" -v hz="$HZ" -v io0="$io0" -v io1="$io1" \
		'BEGIN {split(io0, a); split(io1, b); printf "%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t%.2f\n", r, t, z, n / s, d / hz * 1e6 / n, (b[1] - a[1]) / n, (b[2] - a[2]) / n}' | tee -a "$DIR/results.tsv"
	if [[ -n $tracer ]]; then
		# strace's table: calls in the fourth column, errors (when
		# any) in the fifth, the name last.
		awk -v n="$reqs" -v t="$2" 'NR > 2 && $NF != "total" && $4 ~ /^[0-9]+$/ {
			e = NF == 6 ? $5 : 0
			printf "#   %s %s: %.3f per request, %.3f failing\n", t, $NF, $4 / n, e / n
		}' "$DIR/strace" | sort -k4 -rn | head -8
	fi
}

echo "# $(date -u +%FT%TZ) reps=$REPS dur=$DUR conns=$CONNS; $(nproc) CPUs: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2);print $2}')"
echo "# nginx $(nginx -v 2>&1 | sed 's/.*\///'), haproxy $(haproxy -v | awk 'NR==1{print $3}'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'rep\ttarget\tbytes\trps\tcpu_us_per_req\treads_per_req\twrites_per_req\n' | tee "$DIR/results.tsv"
for rep in $(seq "$REPS"); do
	for size in $SIZES $(for n in $POSTS; do echo "post-$n"; done); do
		# Rotate the order each repetition.
		n=${#TARGETS[@]}
		for i in $(seq 0 $((n - 1))); do
			run "$rep" "${TARGETS[$(((i + rep) % n))]}" "$size"
		done
	done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$DIR/results.tsv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
targets = list(dict.fromkeys(r["target"] for r in rows))
sizes = list(dict.fromkeys(r["bytes"] for r in rows))
med = {}
print("\n| body | proxy | requests/s (median) | spread | CPU µs/request (median) | requests/s ÷ best peer | CPU/request ÷ best peer |")
print("|---|---|---:|---:|---:|---:|---:|")
for z in sizes:
    for t in targets:
        rps = [float(r["rps"]) for r in rows if r["target"] == t and r["bytes"] == z]
        cpu = [float(r["cpu_us_per_req"]) for r in rows if r["target"] == t and r["bytes"] == z]
        med[z, t] = (statistics.median(rps), statistics.median(cpu), (max(rps) - min(rps)) / statistics.median(rps))
    best_rps = max(med[z, p][0] for p in ("haproxy", "nginx"))
    best_cpu = min(med[z, p][1] for p in ("haproxy", "nginx"))
    for t in targets:
        r, c, s = med[z, t]
        label = f"POST {z[5:]} B" if z.startswith("post-") else f"{z} B"
        print(f"| {label} | {t} | {r:,.0f} | {s:.0%} | {c:.2f} | {r / best_rps:.2f} | {c / best_cpu:.2f} |")
EOF
