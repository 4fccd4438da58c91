#!/usr/bin/env bash
# Measures what the resilience features cost the proxy: two sidecars with
# the same listener and cluster, one plain and one with circuit breakers
# (thresholds set, track_remaining on), outlier_detection and a route
# retry_policy with a per-try timeout, run interleaved for ROUNDS rounds
# of DURATION each under wrk. It reports requests/s and the proxy's CPU
# time per request (from /proc/<pid>/stat, so the load generator and the
# upstream, processes of their own, are not counted), with the medians
# and the resilient/plain ratio.
#
#   test/bench/resilience/run.sh [path/to/sidecar]
#
# Each proxy runs with one worker on CPU 0; wrk and the upstream (a
# sidecar answering 128 bytes itself) share CPU 1. Needs wrk and taskset.
# Ports are chosen by the kernel's free-port probe; every listener is on
# 127.0.0.1. Only the processes this script started are signalled.
set -euo pipefail
SIDECAR=${1:-$(dirname "$0")/../../../bin/sidecar}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; return 1; }

# start name cpu yaml: runs a sidecar pinned to cpu with config yaml.
start() {
	printf '%s\n' "$3" >"$DIR/$1.yaml"
	GOMAXPROCS=1 taskset -c "$2" "$SIDECAR" -c "$DIR/$1.yaml" --concurrency 1 --log-level error --disable-hot-restart \
		--termination-drain-time-s 0 >"$DIR/$1.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$1=$!"
}

listener() { # port route-extra
	cat <<Y
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: $1}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: s
          route_config: {virtual_hosts: [{name: a, domains: ["*"], routes: [{match: {prefix: /}, $2}]}]}
          http_filters: [{name: envoy.filters.http.router}]
Y
}

proxy() { # name port cluster-extra route-extra
	start "$1" 0 "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters:
  - {name: up, type: STATIC, connect_timeout: 1s$3, load_assignment: {cluster_name: up, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UP}}}}]}]}}
$(listener "$2" "route: {cluster: up$4}")"
}

UP=$(freeport)
start upstream 1 "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
$(listener "$UP" "direct_response: {status: 200, body: {inline_string: \"$(printf '0123456789abcdef%.0s' 1 2 3 4 5 6 7 8)\"}}")"

P_plain=$(freeport); P_res=$(freeport)
proxy plain "$P_plain" "" ""
proxy res "$P_res" ",
    circuit_breakers: {thresholds: [{priority: DEFAULT, max_connections: 100000, max_pending_requests: 100000, max_requests: 100000, max_retries: 100, track_remaining: true}]},
    outlier_detection: {consecutive_5xx: 5, consecutive_gateway_failure: 5, interval: 1s, base_ejection_time: 5s, max_ejection_percent: 50}" \
	", retry_policy: {retry_on: \"5xx,connect-failure,reset\", num_retries: 2, per_try_timeout: 2s}"
for p in "$UP" "$P_plain" "$P_res"; do wait_port "$p"; done

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

# run label port pid: one wrk run; appends "label rps cpu_us" to results.
run() {
	local before after out reqs secs
	before=$(cpu_ticks "$3")
	out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:$2/")
	after=$(cpu_ticks "$3")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	secs=$(awk '/requests in/ {sub(/s,/, "", $4); print $4}' <<<"$out")
	if grep -q "Non-2xx" <<<"$out"; then echo "$1: wrk saw non-2xx answers" >&2; exit 1; fi
	awk -v l="$1" -v t=$((after - before)) -v n="$reqs" -v s="$secs" -v hz="$HZ" \
		'BEGIN {printf "%s %.0f %.2f\n", l, n / s, t / hz * 1e6 / n}' | tee -a "$DIR/results"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run warm "$P_plain" "$PID_plain" >/dev/null
run warm "$P_res" "$PID_res" >/dev/null
: >"$DIR/results"
for r in $(seq "$ROUNDS"); do
	# Alternate which goes first, so a drift in the machine's load
	# touches both alike.
	if ((r % 2)); then
		run plain "$P_plain" "$PID_plain"; run resilient "$P_res" "$PID_res"
	else
		run resilient "$P_res" "$PID_res"; run plain "$P_plain" "$PID_plain"
	fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Medians per label and the ratios.
median() { # label column
	awk -v l="$1" -v c="$2" '$1 == l {print $c}' "$DIR/results" | sort -n |
		awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
for l in plain resilient; do
	printf 'median %-9s %8.0f req/s %7.2f µs CPU per request\n' "$l" "$(median "$l" 2)" "$(median "$l" 3)"
done
awk -v pr="$(median plain 2)" -v rr="$(median resilient 2)" -v pc="$(median plain 3)" -v rc="$(median resilient 3)" \
	'BEGIN {printf "resilient/plain: requests/s %.3f, CPU per request %.3f\n", rr / pr, rc / pc}'
