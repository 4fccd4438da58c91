package httpconn

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// testListenerScope is the listener stat scope the tests give their
// managers, in the form the listener package uses.
const testListenerScope = "listener.127.0.0.1_10000."

// listenerHTTPStatNames are the per-listener stats of the "test" connection
// manager under testListenerScope, Envoy's CONN_MAN_LISTENER_STATS.
var listenerHTTPStatNames = []string{
	testListenerScope + "http.test.downstream_rq_1xx",
	testListenerScope + "http.test.downstream_rq_2xx",
	testListenerScope + "http.test.downstream_rq_3xx",
	testListenerScope + "http.test.downstream_rq_4xx",
	testListenerScope + "http.test.downstream_rq_5xx",
	testListenerScope + "http.test.downstream_rq_completed",
}

// listenerCounterNames lists the counters of st under "listener.", sorted.
func listenerCounterNames(st *stats.Store) []string {
	var out []string
	for _, n := range st.CounterNames() {
		if strings.HasPrefix(n, "listener.") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestListenerHTTPStatsCreatedUpFront checks that the per-listener stats
// exist (as zeros) from New on when the manager has a listener scope, and
// that a manager without one creates none.
func TestListenerHTTPStatsCreatedUpFront(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope string
		want  []string
	}{
		{name: "with a listener scope", scope: testListenerScope, want: listenerHTTPStatNames},
		{name: "without a listener", scope: "", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			p := startProxy(t, hcm(routeConfig(directRoute("/", 200, "ok"))), Deps{Stats: st, ListenerStatPrefix: tc.scope})
			if got := listenerCounterNames(st); !slices.Equal(got, tc.want) {
				t.Errorf("listener counters = %q, want %q", got, tc.want)
			}
			for _, n := range tc.want {
				if v := p.counter(n); v != 0 {
					t.Errorf("%s = %d before any request, want 0", n, v)
				}
			}
		})
	}
}

// TestListenerHTTPStatsCount checks that each finished request counts in
// the per-listener copy exactly as in "http.<stat_prefix>.": its response
// class and downstream_rq_completed, whatever answered it (a direct
// response, the router with or without an upstream, a protocol error) and
// over either protocol.
func TestListenerHTTPStatsCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		// send does one request against p and returns the status the
		// client saw.
		send  func(t *testing.T, p *proxy) int
		class int // 1 to 5
	}{
		{
			name:  "direct response 200 over HTTP/1.1",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, client(), p.url("/ok")) },
			class: 2,
		},
		{
			name:  "direct response 200 over h2c",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, h2cClient(), p.url("/ok")) },
			class: 2,
		},
		{
			name:  "proxied to the upstream over HTTP/1.1",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, client(), p.url("/echo")) },
			class: 2,
		},
		{
			name:  "proxied to the upstream over h2c",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, h2cClient(), p.url("/echo")) },
			class: 2,
		},
		{
			name:  "direct response 301",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, client(), p.url("/moved")) },
			class: 3,
		},
		{
			name:  "no route 404",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, client(), p.url("/nothing-here")) },
			class: 4,
		},
		{
			name: "protocol error 400 (no host)",
			send: func(t *testing.T, p *proxy) int {
				c := dialRaw(t, p.addr)
				c.send("GET /ok HTTP/1.1\r\n\r\n")
				resp, _ := c.response("GET")
				return resp.StatusCode
			},
			class: 4,
		},
		{
			name:  "unknown cluster 503",
			send:  func(t *testing.T, p *proxy) int { return getStatus(t, client(), p.url("/nowhere")) },
			class: 5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			up := newFakeCluster(st, "echo", false, hostOf(echoUpstream(t)))
			t.Cleanup(up.closeIdle)
			rc := routeConfig(
				directRoute("/ok", 200, "ok"),
				directRoute("/moved", 301, ""),
				clusterRoute("/echo", "echo"),
				clusterRoute("/nowhere", "missing"),
			)
			p := startProxy(t, hcm(rc), Deps{Stats: st, ListenerStatPrefix: testListenerScope, Upstreams: fakeUpstreams{"echo": up}})

			if got := tc.send(t, p); got/100 != tc.class {
				t.Fatalf("status = %d, want a %dxx", got, tc.class)
			}
			// The stream's end is counted after the response leaves; the
			// listener copy's downstream_rq_completed moves last.
			p.waitCounter(t, testListenerScope+"http.test.downstream_rq_completed", 1)
			if got := p.counter("http.test.downstream_rq_completed"); got != 1 {
				t.Errorf("http.test.downstream_rq_completed = %d, want 1", got)
			}
			for class := 1; class <= 5; class++ {
				suffix := "downstream_rq_" + string(rune('0'+class)) + "xx"
				want := uint64(0)
				if class == tc.class {
					want = 1
				}
				if got := p.counter(testListenerScope + "http.test." + suffix); got != want {
					t.Errorf("listener copy %s = %d, want %d", suffix, got, want)
				}
				if got := p.counter("http.test." + suffix); got != want {
					t.Errorf("http.test.%s = %d, want %d", suffix, got, want)
				}
			}
		})
	}
}

// TestListenerHTTPStatsPerListener checks what the copies are for: two
// managers with the same stat_prefix on two listeners share
// "http.<stat_prefix>." but each counts its own requests under its
// listener.
func TestListenerHTTPStatsPerListener(t *testing.T) {
	st := stats.NewStore()
	const scopeA, scopeB = "listener.127.0.0.1_10000.", "listener.ingress."
	rc := routeConfig(directRoute("/ok", 200, "ok"), directRoute("/gone", 503, ""))
	a := startProxy(t, hcm(rc), Deps{Stats: st, ListenerStatPrefix: scopeA})
	b := startProxy(t, hcm(rc), Deps{Stats: st, ListenerStatPrefix: scopeB})

	for range 3 {
		if got := getStatus(t, client(), a.url("/ok")); got != http.StatusOK {
			t.Fatalf("listener A answered %d, want 200", got)
		}
	}
	if got := getStatus(t, client(), b.url("/gone")); got != http.StatusServiceUnavailable {
		t.Fatalf("listener B answered %d, want 503", got)
	}
	// The listener copies' downstream_rq_completed move last.
	a.waitCounter(t, scopeA+"http.test.downstream_rq_completed", 3)
	b.waitCounter(t, scopeB+"http.test.downstream_rq_completed", 1)

	want := map[string]uint64{
		"http.test.downstream_rq_completed":    4,
		"http.test.downstream_rq_2xx":          3,
		"http.test.downstream_rq_5xx":          1,
		scopeA + "http.test.downstream_rq_2xx": 3,
		scopeA + "http.test.downstream_rq_5xx": 0,
		scopeB + "http.test.downstream_rq_2xx": 0,
		scopeB + "http.test.downstream_rq_5xx": 1,
	}
	for name, v := range want {
		if got := a.counter(name); got != v {
			t.Errorf("%s = %d, want %d", name, got, v)
		}
	}
}

// getStatus GETs url and returns the response status.
func getStatus(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	status, _, _ := do(t, c, "GET", url, nil, nil)
	return status
}
