#!/usr/bin/env bash
# Measures what tracing costs the proxy: CPU time per request of the
# sidecar under test (from /proc/<pid>/stat, so the load generator, the
# upstream and the collector, each a process of its own, are not counted)
# with tracing off, at 1% and at 100% (OpenTelemetry over OTLP/HTTP), run
# interleaved for ROUNDS rounds of DURATION each under wrk; and at 100%
# with the runtime key tracing.opentelemetry.min_flush_spans raised from
# Envoy's default of 5 to 100, which shows what the exports themselves
# cost.
#
#   test/bench/tracing/run.sh [path/to/sidecar]
#
# Needs wrk. Ports are chosen by the kernel's free-port probe below; all
# listeners are on 127.0.0.1.
set -euo pipefail
SIDECAR=${1:-$(dirname "$0")/../../../bin/sidecar}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-16}
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# The upstream: a sidecar answering 128 bytes itself.
answer() { # name port body
	cat >"$DIR/$1.yaml" <<Y
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: $2}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: s
          route_config: {virtual_hosts: [{name: a, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: "$3"}}}]}]}
          http_filters: [{name: envoy.filters.http.router}]
Y
	"$SIDECAR" -c "$DIR/$1.yaml" --concurrency 1 --log-level error --termination-drain-time-s 0 --disable-hot-restart >"$DIR/$1.log" 2>&1 &
	PIDS+=($!)
}

proxy() { # name port tracing-block [min_flush_spans]
	cat >"$DIR/$1.yaml" <<Y
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
layered_runtime: {layers: [{name: static, static_layer: {tracing.opentelemetry.min_flush_spans: ${4:-5}}}]}
static_resources:
  clusters:
  - {name: up, type: STATIC, connect_timeout: 1s, load_assignment: {cluster_name: up, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $UP}}}}]}]}}
  - {name: otlp, type: STATIC, connect_timeout: 1s, load_assignment: {cluster_name: otlp, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: $COLLECTOR}}}}]}]}}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: $2}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: s
$3
          route_config: {virtual_hosts: [{name: a, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up}}]}]}
          http_filters: [{name: envoy.filters.http.router}]
Y
	"$SIDECAR" -c "$DIR/$1.yaml" --concurrency 1 --log-level error --termination-drain-time-s 0 --disable-hot-restart >"$DIR/$1.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$1=$!"
}

tracing() { # percent
	cat <<Y
          tracing:
            random_sampling: {value: $1}
            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                http_service: {http_uri: {uri: "http://collector/v1/traces", cluster: otlp, timeout: 1s}}
Y
}

UP=$(freeport); COLLECTOR=$(freeport)
answer upstream "$UP" "$(printf '0123456789abcdef%.0s' 1 2 3 4 5 6 7 8)"
# The collector reads each export and answers 200 on a kept-alive
# connection, as an OpenTelemetry collector does.
cat >"$DIR/collector.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$DIR/collector.py" "$COLLECTOR" &
PIDS+=($!)
P_off=$(freeport); P_1=$(freeport); P_100=$(freeport)
proxy off "$P_off" ""
proxy t1 "$P_1" "$(tracing 1)"
proxy t100 "$P_100" "$(tracing 100)"
P_100b=$(freeport)
proxy t100b "$P_100b" "$(tracing 100)" 100
sleep 1

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

run() { # label port pid
	local before after reqs
	before=$(cpu_ticks "$3")
	reqs=$(wrk -t1 -c"$CONNS" -d"$DURATION" "http://127.0.0.1:$2/" | awk '/requests in/ {print $1}')
	after=$(cpu_ticks "$3")
	awk -v l="$1" -v t=$((after - before)) -v n="$reqs" -v hz="$HZ" \
		'BEGIN {printf "%-6s %9d requests  %8.2f µs CPU per request\n", l, n, t / hz * 1e6 / n}'
}

for r in $(seq "$ROUNDS"); do
	run off "$P_off" "$PID_off"
	run 1% "$P_1" "$PID_t1"
	run 100% "$P_100" "$PID_t100"
	run 100%/b "$P_100b" "$PID_t100b"
done
