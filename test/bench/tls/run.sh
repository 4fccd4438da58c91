#!/usr/bin/env bash
# TLS termination beside haproxy (issue #14's performance figures), on
# loopback, each proxy alone on CPU 0 with one worker (haproxy nbthread 1;
# the sidecar --concurrency 1, GOMAXPROCS=1), the clients and the upstream
# nginx (1 worker, plaintext HTTP/1.1 with keep-alive) on CPU 1. Both
# proxies serve the same ECDSA P-256 certificate, generated here, with ALPN
# h2 and http/1.1; they are driven in turns, one after the other for each
# repetition:
#   keep-alive HTTPS requests/s (wrk, 64 connections, 128 B and 64 KiB),
#   new full handshakes/s and resumed ones (openssl s_time -new / -reuse),
#   h2 over TLS requests/s (h2load, 16 connections x 8 streams), and the
#   sidecar's h2c beside it,
#   memory per idle TLS connection (VmRSS growth over N handshaked, idle
#   connections held by a Python client, divided by N).
# Everything listens on 127.0.0.1; every run is bounded in time; only the
# processes this script started are signalled.
#
# Usage: test/bench/tls/run.sh SIDECAR   (env: REPS=3 DUR=5 IDLE=1000 WORK=/tmp/tls-bench)
set -euo pipefail

SIDECAR=${1:?usage: run.sh path/to/sidecar}
REPS=${REPS:-3}
DUR=${DUR:-5}
IDLE=${IDLE:-1000}
WORK=${WORK:-/tmp/tls-bench}
P_UP=${P_UP:-28080}
P_HAPROXY=${P_HAPROXY:-28443}
P_SIDECAR=${P_SIDECAR:-28444}
P_H2C=${P_H2C:-28081}
P_ADMIN=${P_ADMIN:-28901}

for tool in haproxy nginx wrk h2load openssl python3 taskset; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed (apt-get install haproxy nginx wrk nghttp2-client openssl python3 util-linux)" >&2; exit 1; }
done
ulimit -n 65536 2>/dev/null || ulimit -n 8192
rm -rf "$WORK" && mkdir -p "$WORK/www"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# The certificate: ECDSA P-256, self-signed, for localhost.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
cat "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/haproxy.pem"
head -c 128 /dev/zero | tr '\0' a >"$WORK/www/small"
head -c 65536 /dev/zero | tr '\0' b >"$WORK/www/big"

cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$P_UP; root $WORK/www; }
}
CONF
taskset -c 1 nginx -c "$WORK/nginx.conf" -p "$WORK" & pids+=($!)

cat >"$WORK/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 3000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend tls
  bind 127.0.0.1:$P_HAPROXY ssl crt $WORK/haproxy.pem alpn h2,http/1.1
  default_backend up
backend up
  server up 127.0.0.1:$P_UP
CONF
taskset -c 0 haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 & pids+=($!)
HAPROXY_PID=$!

hcm() { # stat_prefix
	cat <<CONF
        - name: envoy.filters.network.http_connection_manager
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
            stat_prefix: $1
            codec_type: AUTO
            route_config:
              virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up}}]}]
            http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
CONF
}
cat >"$WORK/sidecar.yaml" <<CONF
admin: {address: {socket_address: {address: 127.0.0.1, port_value: $P_ADMIN}}}
static_resources:
  listeners:
  - name: tls
    address: {socket_address: {address: 127.0.0.1, port_value: $P_SIDECAR}}
    filter_chains:
    - transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          common_tls_context:
            alpn_protocols: [h2, http/1.1]
            tls_certificates: [{certificate_chain: {filename: $WORK/cert.pem}, private_key: {filename: $WORK/key.pem}}]
      filters:
$(hcm tls)
  - name: h2c
    address: {socket_address: {address: 127.0.0.1, port_value: $P_H2C}}
    filter_chains:
    - filters:
$(hcm h2c)
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 1s
    load_assignment: {cluster_name: up, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $P_UP}}}}]}]}
CONF
GOMAXPROCS=1 taskset -c 0 "$SIDECAR" -c "$WORK/sidecar.yaml" --concurrency 1 --disable-hot-restart -l warning >"$WORK/sidecar.log" 2>&1 & pids+=($!)
SIDECAR_PID=$!

for port in $P_UP $P_HAPROXY $P_SIDECAR $P_H2C; do
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
		sleep 0.1
	done
done

for p in $HAPROXY_PID $SIDECAR_PID; do
	kill -0 "$p" 2>/dev/null || { echo "run.sh: a proxy exited; see $WORK/haproxy.log and $WORK/sidecar.log" >&2; exit 1; }
done

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# idle_per_conn PORT PID: KiB of RSS per idle, handshaked TLS connection.
idle_per_conn() {
	local before after fifo=$WORK/idle.fifo
	rm -f "$fifo" && mkfifo "$fifo"
	before=$(rss_kib "$2")
	taskset -c 1 python3 - "$1" "$IDLE" >"$fifo" <<'PY' &
import socket, ssl, sys, time
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
conns = []
for _ in range(int(sys.argv[2])):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="localhost")
    conns.append(s)
print("ready", flush=True)
time.sleep(30)
PY
	local py=$!
	read -r -t 120 _ <"$fifo" || true
	sleep 2
	after=$(rss_kib "$2")
	kill "$py" 2>/dev/null || true
	wait "$py" 2>/dev/null || true
	awk -v a="$after" -v b="$before" -v n="$IDLE" 'BEGIN {printf "%.1f", (a - b) / n}'
}

printf 'test\tproxy\trep\tvalue\tunit\tproxy_cpu_us_per_op\n' >"$WORK/results.tsv"
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" | tee -a "$WORK/results.tsv"; }

# Idle connections first, while both proxies are fresh (no pools or heap
# grown by the load runs).
for target in haproxy outrigger; do
	port=$P_HAPROXY pid=$HAPROXY_PID
	[ "$target" = outrigger ] && port=$P_SIDECAR pid=$SIDECAR_PID
	record "idle-tls-memory" "$target" 1 "$(idle_per_conn "$port" "$pid")" "KiB/conn" ""
done

for rep in $(seq "$REPS"); do
	for target in haproxy outrigger; do
		port=$P_HAPROXY pid=$HAPROXY_PID
		[ "$target" = outrigger ] && port=$P_SIDECAR pid=$SIDECAR_PID
		for body in small big; do
			c0=$(cpu_ticks "$pid")
			out=$(taskset -c 1 timeout $((DUR + 30)) wrk -t1 -c64 -d"${DUR}s" "https://127.0.0.1:$port/$body")
			c1=$(cpu_ticks "$pid")
			rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
			n=$(awk '/requests in/ {print $1}' <<<"$out")
			record "https-keepalive-$body" "$target" "$rep" "$rps" "req/s" "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.1f", c * 1e6 / 100 / n}')"
		done
		# Resumption is measured with TLS 1.2: s_time closes a TLS 1.3
		# connection before reading the ticket that follows the handshake.
		for mode in new reuse; do
			version=-tls1_3
			[ "$mode" = reuse ] && version=-tls1_2
			c0=$(cpu_ticks "$pid")
			out=$(taskset -c 1 timeout $((DUR + 30)) openssl s_time -connect "127.0.0.1:$port" -"$mode" "$version" -time "$DUR" 2>&1)
			c1=$(cpu_ticks "$pid")
			n=$(awk '/connections in/ && /real seconds/ {print $1; exit}' <<<"$out")
			secs=$(awk '/connections in/ && /real seconds/ {print $4; exit}' <<<"$out")
			record "handshakes-$mode" "$target" "$rep" "$(awk -v n="$n" -v s="$secs" 'BEGIN {printf "%.0f", n / s}')" "conn/s" "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.1f", c * 1e6 / 100 / n}')"
		done
		c0=$(cpu_ticks "$pid")
		out=$(taskset -c 1 timeout $((DUR + 30)) h2load -c16 -m8 -D "$DUR" "https://127.0.0.1:$port/small" 2>&1)
		c1=$(cpu_ticks "$pid")
		n=$(awk '/requests:/ {print $8; exit}' <<<"$out")
		record "h2-tls-small" "$target" "$rep" "$(awk '/finished in/ {gsub(",", "", $4); print $4; exit}' <<<"$out")" "req/s" "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {if (n > 0) printf "%.1f", c * 1e6 / 100 / n}')"
	done
	c0=$(cpu_ticks "$SIDECAR_PID")
	out=$(taskset -c 1 timeout $((DUR + 30)) h2load -c16 -m8 -D "$DUR" "http://127.0.0.1:$P_H2C/small" 2>&1)
	c1=$(cpu_ticks "$SIDECAR_PID")
	n=$(awk '/requests:/ {print $8; exit}' <<<"$out")
	record "h2c-small" "outrigger" "$rep" "$(awk '/finished in/ {gsub(",", "", $4); print $4; exit}' <<<"$out")" "req/s" "$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN {if (n > 0) printf "%.1f", c * 1e6 / 100 / n}')"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$WORK/results.tsv"
