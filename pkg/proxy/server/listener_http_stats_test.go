package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// httpListener is a listener named name whose connection manager has the
// stat_prefix hcmPrefix and answers /ok with 200 and anything else with
// 503; socket is the flow mapping of its socket_address and extra is
// added to the listener.
func httpListener(name, socket, hcmPrefix, extra string) string {
	return fmt.Sprintf(`
  - name: %s
    address: {socket_address: %s}
    %s
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: %s
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {path: "/ok"}
                direct_response: {status: 200}
              - match: {prefix: "/"}
                direct_response: {status: 503}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}`,
		name, socket, extra, hcmPrefix)
}

// TestListenerHTTPStatScope checks that the connection manager's
// per-listener stats sit in the very scope the listener names its own
// stats with, whatever the spelling of the listener's address.
func TestListenerHTTPStatScope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		socket string
		extra  string
		want   string
	}{
		{name: "IPv4 address and port", socket: "{address: 127.0.0.1, port_value: 10000}", want: "listener.127.0.0.1_10000."},
		{name: "OS-chosen port", socket: "{address: 127.0.0.1, port_value: 0}", want: "listener.127.0.0.1_0."},
		{name: "IPv6", socket: `{address: "::1", port_value: 10000}`, want: "listener.[__1]_10000."},
		{name: "IPv6 written in full", socket: `{address: "0:0:0:0:0:0:0:1", port_value: 10000}`, want: "listener.[__1]_10000."},
		{name: "IPv6 wildcard with ipv4_compat", socket: `{address: "::", port_value: 10000, ipv4_compat: true}`, want: "listener.[__]_10000."},
		{name: "IPv4-mapped with ipv4_compat", socket: `{address: "::ffff:127.0.0.1", port_value: 10000, ipv4_compat: true}`, want: "listener.127.0.0.1_10000."},
		{name: "IPv4-mapped without ipv4_compat", socket: `{address: "::ffff:127.0.0.1", port_value: 10000}`, want: "listener.[__ffff_127.0.0.1]_10000."},
		{name: "listener stat_prefix", socket: "{address: 127.0.0.1, port_value: 10000}", extra: "stat_prefix: ingress", want: "listener.ingress."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildListenerServer(t, withListeners(httpListener("l", tc.socket, "web", tc.extra)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(s.closeListeners)
			names := s.stats.CounterNames()
			// The listener's own stat and the connection manager's copy.
			for _, n := range []string{tc.want + "downstream_cx_total", tc.want + "http.web.downstream_rq_completed"} {
				if !slices.Contains(names, n) {
					t.Errorf("no counter %s", n)
				}
			}
			var copies []string
			for _, n := range names {
				if strings.HasPrefix(n, "listener.") && strings.Contains(n, ".http.web.") {
					copies = append(copies, n)
				}
			}
			if len(copies) != 6 {
				t.Errorf("per-listener connection manager counters = %q, want the 6 of %s", copies, tc.want+"http.web.")
			}
		})
	}
}

// TestListenerHTTPStatsCountPerListener serves real requests on two
// listeners whose connection managers share a stat_prefix: "http.web."
// counts them all, each listener's copy only its own.
func TestListenerHTTPStatsCountPerListener(t *testing.T) {
	s := startListenerServer(t, withListeners(
		httpListener("a", "{address: 127.0.0.1, port_value: 0}", "web", ""),
		httpListener("b", "{address: 127.0.0.1, port_value: 0}", "web", "stat_prefix: b_side"),
	))
	requests := []struct {
		listener, path string
		status         int
	}{
		{"a", "/ok", http.StatusOK},
		{"a", "/ok", http.StatusOK},
		{"a", "/missing", http.StatusServiceUnavailable},
		{"b", "/ok", http.StatusOK},
	}
	for _, r := range requests {
		code, _, err := fetch(t, listenerAddr(t, s, r.listener), r.path)
		if err != nil || code != r.status {
			t.Fatalf("%s %s: %d %v, want %d", r.listener, r.path, code, err, r.status)
		}
	}
	// A stream's per-listener downstream_rq_completed is counted last.
	const scopeA, scopeB = "listener.127.0.0.1_0.http.web.", "listener.b_side.http.web."
	waitUntil(t, "the requests to be counted", func() bool {
		return s.stats.Counter(scopeA+"downstream_rq_completed").Value() == 3 &&
			s.stats.Counter(scopeB+"downstream_rq_completed").Value() == 1
	})
	want := map[string]uint64{
		"http.web.downstream_rq_completed": 4,
		"http.web.downstream_rq_2xx":       3,
		"http.web.downstream_rq_5xx":       1,
		scopeA + "downstream_rq_2xx":       2,
		scopeA + "downstream_rq_5xx":       1,
		scopeB + "downstream_rq_2xx":       1,
		scopeB + "downstream_rq_5xx":       0,
	}
	for name, v := range want {
		if got := s.stats.Counter(name).Value(); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
}
