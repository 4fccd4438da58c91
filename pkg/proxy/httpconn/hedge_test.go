package httpconn

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// eventLog records what the upstreams saw, in order.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, ",")
}

// waitFor waits up to 5 s for the log to hold e.
func (l *eventLog) waitFor(t *testing.T, e string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(","+l.String()+",", ","+e+",") {
			return
		}
	}
	t.Errorf("events %q never had %q", l.String(), e)
}

// hedgeUpstream answers like status after delay (0: at once; -1: never,
// until the request is cancelled), recording "<name>:got", then
// "<name>:cancelled" or "<name>:answered". It reads the body whole first
// and echoes it after its name. It speaks HTTP/1.1 and h2c.
func hedgeUpstream(t *testing.T, log *eventLog, name string, status int, delay time.Duration) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		log.add(name + ":got")
		var wait <-chan time.Time
		if delay >= 0 {
			wait = time.After(delay)
		}
		select {
		case <-r.Context().Done():
			log.add(name + ":cancelled")
			return
		case <-release:
			return
		case <-wait:
		}
		log.add(name + ":answered")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, name+":"+string(b))
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	// Before Close, which waits for the handlers.
	t.Cleanup(func() { close(release) })
	return srv
}

// internalHCM is hcm(rc) for which loopback clients are internal, so
// that their x-envoy-* request headers count.
func internalHCM(rc *routev3.RouteConfiguration) *hcmv3.HttpConnectionManager {
	cfg := hcm(rc)
	cfg.UseRemoteAddress = wrapperspb.Bool(true)
	cfg.InternalAddressConfig = &hcmv3.HttpConnectionManager_InternalAddressConfig{
		CidrRanges: []*corev3.CidrRange{{AddressPrefix: "127.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
	}
	return cfg
}

// hedgeRoute is a route with a 150 ms per-try timeout, retrying 5xx
// num times, hedging or not.
func hedgeRoute(num uint32, hedge bool) *routev3.Route {
	return clusterRoute("/", "up", func(a *routev3.RouteAction) {
		a.Timeout = durationpb.New(5 * time.Second)
		a.RetryPolicy = &routev3.RetryPolicy{
			RetryOn: "5xx", NumRetries: wrapperspb.UInt32(num), PerTryTimeout: durationpb.New(150 * time.Millisecond),
			RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(time.Millisecond)},
		}
		if hedge {
			a.HedgePolicy = &routev3.HedgePolicy{HedgeOnPerTryTimeout: true}
		}
	})
}

// With hedging, a per-try timeout leaves the slow attempt running and
// starts another on the next host; the fast answer wins and the slow
// attempt is reset after it. Over both upstream protocols, with the
// route's policy or the request header, and a request body.
func TestHedgeFastHostWins(t *testing.T) {
	for _, upstreamH2 := range []bool{false, true} {
		for _, byHeader := range []bool{false, true} {
			log := &eventLog{}
			st := stats.NewStore()
			fc := slowFastCluster(t, log, st, upstreamH2)
			p := startProxy(t, internalHCM(routeConfig(hedgeRoute(1, !byHeader))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
			var hdr map[string]string
			if byHeader {
				hdr = map[string]string{"x-envoy-hedge-on-per-try-timeout": "true"}
			}
			c := client()
			if byHeader {
				// The header case comes from an HTTP/2 client.
				c = h2cClient()
			}
			status, _, body := do(t, c, "POST", p.url("/x"), strings.NewReader("req"), hdr)
			if status != 200 || body != "fast:req" {
				t.Errorf("h2 upstream %v, header %v: %d %q; want 200 from the fast host", upstreamH2, byHeader, status, body)
			}
			log.waitFor(t, "slow:cancelled")
			if got, want := log.String(), "slow:got,fast:got,fast:answered,slow:cancelled"; got != want {
				t.Errorf("h2 upstream %v, header %v: events %q; want %q", upstreamH2, byHeader, got, want)
			}
			rs := fc.stats.Retries()
			if rs.Retry().Value() != 1 || rs.PerTryTimeout().Value() != 0 {
				t.Errorf("upstream_rq_retry %d, upstream_rq_per_try_timeout %d; want 1, 0 (Envoy counts no per-try timeout when hedging)", rs.Retry().Value(), rs.PerTryTimeout().Value())
			}
		}
	}
}

// Without hedging (or with the header saying false), the per-try timeout
// resets the slow attempt before the next starts.
func TestHedgeOff(t *testing.T) {
	for _, hdr := range []map[string]string{nil, {"x-envoy-hedge-on-per-try-timeout": "false"}} {
		log := &eventLog{}
		st := stats.NewStore()
		fc := slowFastCluster(t, log, st, false)
		p := startProxy(t, internalHCM(routeConfig(hedgeRoute(1, hdr != nil))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		status, _, body := do(t, client(), "POST", p.url("/x"), strings.NewReader("req"), hdr)
		if status != 200 || body != "fast:req" {
			t.Errorf("%v: %d %q; want 200 from the fast host", hdr, status, body)
		}
		// The slow attempt was reset at its per-try timeout, which
		// counts (when hedging it does not), before the next went out;
		// when the slow host notices is its own business.
		log.waitFor(t, "slow:cancelled")
		if got := fc.stats.Retries().PerTryTimeout().Value(); got != 1 {
			t.Errorf("%v: upstream_rq_per_try_timeout = %d; want 1", hdr, got)
		}
	}
}

// A retriable answer of the hedged attempt, with no retries left, waits
// for the first attempt, whose answer wins.
func TestHedgeBadAnswerWaits(t *testing.T) {
	for _, upstreamH2 := range []bool{false, true} {
		log := &eventLog{}
		slow := hedgeUpstream(t, log, "slow", 200, time.Second)
		bad := hedgeUpstream(t, log, "bad", 503, 0)
		st := stats.NewStore()
		fc := newFakeCluster(st, "up", upstreamH2, hostOf(slow), hostOf(bad))
		t.Cleanup(fc.closeIdle)
		p := startProxy(t, hcm(routeConfig(hedgeRoute(1, true))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		status, _, body := do(t, client(), "GET", p.url("/x"), nil, nil)
		if status != 200 || body != "slow:" {
			t.Errorf("h2 upstream %v: %d %q; want 200 from the slow host", upstreamH2, status, body)
		}
		if got, want := log.String(), "slow:got,bad:got,bad:answered,slow:answered"; got != want {
			t.Errorf("h2 upstream %v: events %q; want %q", upstreamH2, got, want)
		}
		if got := fc.stats.Retries().LimitExceeded().Value(); got != 1 {
			t.Errorf("upstream_rq_retry_limit_exceeded = %d; want 1", got)
		}
	}
}

// num_retries bounds the attempts; the route timeout ends them all with
// a 504.
func TestHedgeRetryLimit(t *testing.T) {
	log := &eventLog{}
	var addrs []string
	for _, n := range []string{"a", "b", "c", "d"} {
		addrs = append(addrs, hostOf(hedgeUpstream(t, log, n, 200, -1)))
	}
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, addrs...)
	t.Cleanup(fc.closeIdle)
	route := hedgeRoute(2, true)
	route.GetRoute().Timeout = durationpb.New(time.Second)
	p := startProxy(t, hcm(routeConfig(route)), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
	status, _, _ := do(t, client(), "GET", p.url("/x"), nil, nil)
	if status != 504 {
		t.Errorf("status %d; want 504 at the route timeout", status)
	}
	for _, n := range []string{"a", "b", "c"} {
		log.waitFor(t, n+":cancelled")
	}
	if strings.Contains(log.String(), "d:") {
		t.Errorf("events %q: a fourth attempt went out with num_retries 2", log.String())
	}
	if got := fc.stats.UpstreamRqTimeout().Value(); got != 3 {
		t.Errorf("upstream_rq_timeout = %d; want 3 (one per attempt in flight)", got)
	}
}

// A hedged request on a pooled connection the upstream closed meanwhile
// goes out again on a fresh one, as without hedging: no failure, no
// retry.
func TestHedgeStaleConnection(t *testing.T) {
	log := &eventLog{}
	up := hedgeUpstream(t, log, "up", 200, 0)
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, hostOf(up))
	t.Cleanup(fc.closeIdle)
	p := startProxy(t, hcm(routeConfig(hedgeRoute(1, true))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
	for i := range 2 {
		if status, _, body := do(t, client(), "GET", p.url("/x"), nil, nil); status != 200 || body != "up:" {
			t.Fatalf("request %d: %d %q; want 200", i, status, body)
		}
		// The pooled connection dies under the proxy.
		up.CloseClientConnections()
		time.Sleep(50 * time.Millisecond)
	}
	if got := fc.stats.Retries().Retry().Value(); got != 0 {
		t.Errorf("upstream_rq_retry = %d; want 0", got)
	}
	if got := fc.dials.Load(); got != 2 {
		t.Errorf("%d dials; want 2 (the second request dialled again)", got)
	}
}

// A client that goes away (an HTTP/1.1 client closing its connection, an
// HTTP/2 client resetting its stream) ends the race: every attempt is
// reset.
func TestHedgeClientGone(t *testing.T) {
	for _, clientH2 := range []bool{false, true} {
		log := &eventLog{}
		a := hedgeUpstream(t, log, "a", 200, -1)
		b := hedgeUpstream(t, log, "b", 200, -1)
		st := stats.NewStore()
		fc := newFakeCluster(st, "up", false, hostOf(a), hostOf(b))
		t.Cleanup(fc.closeIdle)
		p := startProxy(t, hcm(routeConfig(hedgeRoute(1, true))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		c := client()
		if clientH2 {
			c = h2cClient()
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, "GET", p.url("/x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			log.waitFor(t, "b:got")
			cancel()
		}()
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
			t.Errorf("client h2 %v: got %d; want the request cancelled", clientH2, resp.StatusCode)
		}
		log.waitFor(t, "a:cancelled")
		log.waitFor(t, "b:cancelled")
		cancel()
	}
}

// Under hedging, per_try_idle_timeout is one more per-try timeout before
// the head, as Envoy's: it hedges rather than resets.
func TestHedgePerTryIdle(t *testing.T) {
	for _, upstreamH2 := range []bool{false, true} {
		log := &eventLog{}
		st := stats.NewStore()
		fc := slowFastCluster(t, log, st, upstreamH2)
		route := hedgeRoute(1, true)
		rp := route.GetRoute().RetryPolicy
		rp.PerTryTimeout, rp.PerTryIdleTimeout = nil, durationpb.New(150*time.Millisecond)
		p := startProxy(t, hcm(routeConfig(route)), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		status, _, body := do(t, client(), "GET", p.url("/x"), nil, nil)
		if status != 200 || body != "fast:" {
			t.Errorf("h2 upstream %v: %d %q; want 200 from the fast host", upstreamH2, status, body)
		}
		log.waitFor(t, "slow:cancelled")
		if got, want := log.String(), "slow:got,fast:got,fast:answered,slow:cancelled"; got != want {
			t.Errorf("h2 upstream %v: events %q; want %q", upstreamH2, got, want)
		}
		if got := fc.stats.Retries().PerTryIdleTimeout().Value(); got != 0 {
			t.Errorf("upstream_rq_per_try_idle_timeout = %d; want 0", got)
		}
	}
}

// With hedging, x-envoy-expected-rq-timeout-ms carries the route timeout,
// as any attempt may run that long; without, the per-try timeout.
func TestHedgeExpectedTimeout(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("x-envoy-expected-rq-timeout-ms"))
	}))
	t.Cleanup(up.Close)
	for _, hedge := range []bool{false, true} {
		st := stats.NewStore()
		fc := newFakeCluster(st, "up", false, hostOf(up))
		t.Cleanup(fc.closeIdle)
		p := startProxy(t, hcm(routeConfig(hedgeRoute(1, hedge))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		want := map[bool]string{false: "150", true: "5000"}[hedge]
		if status, _, body := do(t, client(), "GET", p.url("/x"), nil, nil); status != 200 || body != want {
			t.Errorf("hedge %v: %d, expected timeout %q; want %q", hedge, status, body, want)
		}
	}
}

// slowFastCluster is the cluster "up" of two hedge upstreams logging to
// log: "slow", which never answers (it records its cancellation), and
// "fast", which answers at once; its idle connections close with the test.
func slowFastCluster(t *testing.T, log *eventLog, st *stats.Store, upstreamH2 bool) *fakeCluster {
	t.Helper()
	slow := hedgeUpstream(t, log, "slow", 200, -1)
	fast := hedgeUpstream(t, log, "fast", 200, 0)
	fc := newFakeCluster(st, "up", upstreamH2, hostOf(slow), hostOf(fast))
	t.Cleanup(fc.closeIdle)
	return fc
}
