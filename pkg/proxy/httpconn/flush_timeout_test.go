package httpconn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// flushBody is a response body larger than the 10-byte window the test
// client grants, so its write waits on the client.
var flushBody = strings.Repeat("x", 100)

// flushUpstream answers every request with flushBody, with a
// Content-Length; over HTTP/2 (h2c) when h2 is set.
func flushUpstream(t *testing.T, h2 bool) *httptest.Server {
	t.Helper()
	if h2 {
		return h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(flushBody)) }))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(flushBody)) }))
	t.Cleanup(srv.Close)
	return srv
}

// endlessUpstream sends flushBody and then holds the response open until
// the request ends.
func endlessUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(flushBody))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestH2StreamFlushTimeout checks stream_flush_timeout and the route's
// flush_timeout: a client that does not open its window for a response
// that has all been produced gets its stream reset after the flush
// timeout (counted as http2.tx_flush_timeout), with Envoy's order of
// precedence (route flush_timeout, stream_flush_timeout, route
// idle_timeout, stream_idle_timeout); while the response is still coming,
// the stream idle timeout applies instead (downstream_rq_idle_timeout).
func TestH2StreamFlushTimeout(t *testing.T) {
	short, long := 300*time.Millisecond, time.Minute
	tests := map[string]struct {
		up       func(t *testing.T) *httptest.Server
		hcm      func(c *hcmv3.HttpConnectionManager)
		route    func(a *routev3.RouteAction)
		flush    uint64
		idle     uint64
		upstream bool
	}{
		"stream_flush_timeout, HTTP/1 upstream": {
			up: func(t *testing.T) *httptest.Server { return flushUpstream(t, false) },
			hcm: func(c *hcmv3.HttpConnectionManager) {
				c.StreamFlushTimeout, c.StreamIdleTimeout = ms(300), durationOf(long)
			},
			flush: 1,
		},
		"stream_flush_timeout, HTTP/2 upstream": {
			up: func(t *testing.T) *httptest.Server { return flushUpstream(t, true) },
			hcm: func(c *hcmv3.HttpConnectionManager) {
				c.StreamFlushTimeout, c.StreamIdleTimeout = ms(300), durationOf(long)
			},
			flush: 1, upstream: true,
		},
		"the route's flush_timeout overrides stream_flush_timeout": {
			up: func(t *testing.T) *httptest.Server { return flushUpstream(t, false) },
			hcm: func(c *hcmv3.HttpConnectionManager) {
				c.StreamFlushTimeout, c.StreamIdleTimeout = durationOf(long), durationOf(long)
			},
			route: func(a *routev3.RouteAction) { a.FlushTimeout = durationOf(short) },
			flush: 1,
		},
		"without a flush timeout, the route's idle_timeout": {
			up:    func(t *testing.T) *httptest.Server { return flushUpstream(t, false) },
			hcm:   func(c *hcmv3.HttpConnectionManager) { c.StreamIdleTimeout = durationOf(long) },
			route: func(a *routev3.RouteAction) { a.IdleTimeout = durationOf(short) },
			flush: 1,
		},
		"without any, stream_idle_timeout": {
			up:    func(t *testing.T) *httptest.Server { return flushUpstream(t, false) },
			hcm:   func(c *hcmv3.HttpConnectionManager) { c.StreamIdleTimeout = durationOf(short) },
			flush: 1,
		},
		"a response still coming waits under the stream idle timeout": {
			up: endlessUpstream,
			hcm: func(c *hcmv3.HttpConnectionManager) {
				c.StreamFlushTimeout, c.StreamIdleTimeout = durationOf(long), durationOf(short)
			},
			idle: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			up := tc.up(t)
			st := stats.NewStore()
			var edits []func(*routev3.RouteAction)
			if tc.route != nil {
				edits = append(edits, tc.route)
			}
			cfg := hcm(routeConfig(clusterRoute("/", "up", edits...)))
			cfg.CodecType = hcmv3.HttpConnectionManager_HTTP2
			tc.hcm(cfg)
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", tc.upstream, hostOf(up))}})
			c := dialH2(t, p.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
			c.autoWindow = false
			id := c.get("/")
			c.until("the stream's reset", func() bool { return c.resp(id).reset })
			if got := c.resp(id).body.Len(); got != 10 {
				t.Errorf("the client got %d bytes before the reset, want its window's 10", got)
			}
			p.waitCounter(t, "http2.tx_flush_timeout", tc.flush)
			p.waitCounter(t, "http.test.downstream_rq_idle_timeout", tc.idle)
		})
	}
}

// durationOf is d as a protobuf duration.
func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
