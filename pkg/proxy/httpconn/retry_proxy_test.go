package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// failOnceUpstream answers each path's first request 503, after reading
// its body whole, and echoes the body of the next; /early/... answers 503
// at once, without reading the body. It speaks HTTP/1.1 and h2c.
func failOnceUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	return h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/early/") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(b)
	}))
}

// A request body is kept and sent again to the retry, over each upstream
// protocol and from each client protocol; the attempt counts show in the
// response. Run under -race, this also checks that the HTTP/2
// transport's goroutine and the stream share the kept body safely.
func TestRetryResendsBody(t *testing.T) {
	up := failOnceUpstream(t)
	for _, upstreamH2 := range []bool{false, true} {
		for _, clientH2 := range []bool{false, true} {
			st := stats.NewStore()
			fc := newFakeCluster(st, "up", upstreamH2, hostOf(up))
			t.Cleanup(fc.closeIdle)
			rc := routeConfig(clusterRoute("/", "up", func(a *routev3.RouteAction) {
				a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx"}
			}))
			rc.VirtualHosts[0].IncludeAttemptCountInResponse = true
			p := startProxy(t, hcm(rc), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
			c := client()
			if clientH2 {
				c = h2cClient()
			}
			name := map[bool]string{false: "h1", true: "h2"}
			path := "/" + name[clientH2] + "-to-" + name[upstreamH2]
			body := strings.Repeat("payload-", 1000)
			status, hdr, got := do(t, c, "POST", p.url(path), strings.NewReader(body), nil)
			if status != 200 || got != body || hdr.Get("x-envoy-attempt-count") != "2" {
				t.Errorf("%s: %d, %d bytes, attempts %q; want 200, the body echoed, 2", path, status, len(got), hdr.Get("x-envoy-attempt-count"))
			}
			if !upstreamH2 {
				continue
			}
			// An HTTP/2 upstream's answer before the body was read
			// is not retried (the body was not kept whole yet), and
			// nothing hangs.
			pr, pw := io.Pipe()
			go func() { _, _ = io.WriteString(pw, "ab") }()
			status, _, _ = do(t, c, "POST", p.url("/early"+path), pr, nil)
			_ = pw.Close()
			if status != 503 {
				t.Errorf("/early%s: %d; want 503", path, status)
			}
			if got := fc.stats.Retries().Retry().Value(); got < 1 {
				t.Errorf("%s: upstream_rq_retry = %d", path, got)
			}
		}
	}
}
