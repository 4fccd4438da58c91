package httpconn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/upstreamcodec"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// attemptTracker follows the instances of the lifecycle test filter:
// each one starts a goroutine of its own when it decodes (standing for a
// side stream such as ext_proc's), which only its OnDestroy ends.
type attemptTracker struct {
	mu        sync.Mutex
	made      int
	destroyed int
	twice     int
	live      int
	encodedBy []string
	wg        sync.WaitGroup
}

// counts returns how many instances were made and destroyed, and how
// many goroutines of theirs still run.
func (tr *attemptTracker) counts() (made, destroyed, live int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.made, tr.destroyed, tr.live
}

// settled waits until every instance made was destroyed and its
// goroutine has ended, then checks that made instances were.
func (tr *attemptTracker) settled(t *testing.T, made int) {
	t.Helper()
	eventually(t, "the upstream filters' end", func() bool {
		m, d, l := tr.counts()
		return m == d && l == 0
	})
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.made != made || tr.twice != 0 {
		t.Errorf("%d instances made (%d destroyed twice), want %d", tr.made, tr.twice, made)
	}
}

// lifeFactory builds the lifecycle test filter, upstream-capable.
type lifeFactory struct{ tr *attemptTracker }

func (lifeFactory) UpstreamCapable() {}

func (f lifeFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return lifeConfig(f), nil
}

type lifeConfig struct{ tr *attemptTracker }

// NewFilter makes an instance numbered in the order they are made.
func (c lifeConfig) NewFilter() httpfilter.Filter {
	c.tr.mu.Lock()
	defer c.tr.mu.Unlock()
	c.tr.made++
	return &lifeFilter{tr: c.tr, id: strconv.Itoa(c.tr.made), stop: make(chan struct{})}
}

type lifeFilter struct {
	tr        *attemptTracker
	id        string
	stop      chan struct{}
	decoded   bool
	destroyed bool
}

// DecodeHeaders names the instance in x-filter-instance and starts its
// goroutine.
func (f *lifeFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.decoded = true
	s.RequestHeaders().Set("x-filter-instance", f.id)
	f.tr.mu.Lock()
	f.tr.live++
	f.tr.mu.Unlock()
	f.tr.wg.Add(1)
	go func() {
		defer f.tr.wg.Done()
		<-f.stop
		f.tr.mu.Lock()
		f.tr.live--
		f.tr.mu.Unlock()
	}()
	return httpfilter.Continue
}

// EncodeHeaders records which instance encoded the response, and
// whether it is one that decoded a request.
func (f *lifeFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	by := f.id
	if !f.decoded || f.destroyed {
		by += "(not decoded, or destroyed)"
	}
	s.ResponseHeaders().Set("x-encoded-by", by)
	f.tr.mu.Lock()
	f.tr.encodedBy = append(f.tr.encodedBy, by)
	f.tr.mu.Unlock()
	return httpfilter.Continue
}

// OnDestroy ends the instance's goroutine.
func (f *lifeFilter) OnDestroy() {
	f.tr.mu.Lock()
	defer f.tr.mu.Unlock()
	if f.destroyed {
		f.tr.twice++
		return
	}
	f.destroyed = true
	f.tr.destroyed++
	if f.decoded {
		close(f.stop)
	}
}

// lifeRegistry has the router, upstream_codec, the deny filter and the
// lifecycle filter of tr.
func lifeRegistry(t testing.TB, tr *attemptTracker) *extension.Registry {
	t.Helper()
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("proxy.filters.http.deny", httpFiltersCategory, &wrapperspb.BoolValue{}, denyFactory{}),
		extension.Of("proxy.filters.http.life", httpFiltersCategory, &wrapperspb.StringValue{}, lifeFactory{tr}),
		extension.Of(upstreamcodec.Name, httpfilter.UpstreamCategory, &upstreamcodecv3.UpstreamCodec{}, upstreamcodec.Factory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// instanceRecorder is an upstream that records the x-filter-instance of
// each request and answers the first failFirst 503.
func instanceRecorder(t *testing.T, failFirst int) (*httptest.Server, func() []string) {
	t.Helper()
	return requestRecorder(t, failFirst, func(r *http.Request) string { return r.Header.Get("x-filter-instance") })
}

// TestUpstreamFilterPerAttempt checks that each attempt runs upstream
// filters of its own, which encode its response, and that they end with
// the attempt however it ends: retried, timed out, hedged and lost,
// reset by the client, answered by a later upstream filter. Nothing the
// instances started outlives them.
func TestUpstreamFilterPerAttempt(t *testing.T) {
	life := filter("life", wrapperspb.String(""))
	for _, upstreamH2 := range []bool{false, true} {
		proto := fmt.Sprintf("h2 upstream %v", upstreamH2)
		t.Run(proto+"/retried", func(t *testing.T) {
			tr := &attemptTracker{}
			up, seen := instanceRecorder(t, 2)
			st := stats.NewStore()
			retry2 := func(a *routev3.RouteAction) {
				a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(2)}
			}
			cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/", "up", retry2))), upstreamFilters(life))
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", upstreamH2, hostOf(up))}, Extensions: lifeRegistry(t, tr)})
			status, hdr, _ := do(t, client(), "GET", p.url("/x"), nil, nil)
			if status != 200 || hdr.Get("x-encoded-by") != "3" {
				t.Errorf("status %d encoded by %q, want 200 encoded by the third attempt's filter", status, hdr.Get("x-encoded-by"))
			}
			if got := strings.Join(seen(), ","); got != "1,2,3" {
				t.Errorf("the upstream saw instances %q, want 1,2,3", got)
			}
			tr.settled(t, 3)
		})
		for _, hedge := range []bool{false, true} {
			// A per-try timeout retries the attempt, or, hedged, races
			// it against the next: the fast host's answer wins.
			name := proto + "/per-try timeout"
			if hedge {
				name = proto + "/hedged"
			}
			t.Run(name, func(t *testing.T) {
				tr := &attemptTracker{}
				log := &eventLog{}
				st := stats.NewStore()
				fc := slowFastCluster(t, log, st, upstreamH2)
				cfg := withUpstreamFilters(internalHCM(routeConfig(hedgeRoute(1, hedge))), upstreamFilters(life))
				p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, Extensions: lifeRegistry(t, tr)})
				status, hdr, body := do(t, client(), "GET", p.url("/x"), nil, nil)
				if status != 200 || body != "fast:" || hdr.Get("x-encoded-by") != "2" {
					t.Errorf("%d %q encoded by %q, want 200 from the fast host encoded by the second attempt's filter", status, body, hdr.Get("x-encoded-by"))
				}
				log.waitFor(t, "slow:cancelled")
				tr.settled(t, 2)
				if n := len(tr.encodedBy); n != 1 {
					t.Errorf("%d responses encoded (%q), want the fast host's only", n, tr.encodedBy)
				}
			})
		}
		t.Run(proto+"/client reset", func(t *testing.T) {
			tr := &attemptTracker{}
			log := &eventLog{}
			st := stats.NewStore()
			never := hedgeUpstream(t, log, "never", 200, -1)
			cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/", "up"))), upstreamFilters(life))
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", upstreamH2, hostOf(never))}, Extensions: lifeRegistry(t, tr)})
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, "GET", p.url("/x"), nil)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				for !strings.Contains(log.String(), "never:got") {
					time.Sleep(5 * time.Millisecond)
				}
				cancel()
			}()
			// An HTTP/2 client: its cancel resets the stream.
			if resp, err := h2cClient().Do(req); err == nil {
				_ = resp.Body.Close()
				t.Errorf("status %d, want the request cancelled", resp.StatusCode)
			}
			log.waitFor(t, "never:cancelled")
			tr.settled(t, 1)
		})
	}
	t.Run("answered by a later filter", func(t *testing.T) {
		tr := &attemptTracker{}
		up, seen := instanceRecorder(t, 0)
		st := stats.NewStore()
		cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/", "up", retry5xx))), upstreamFilters(life, filter("deny", wrapperspb.Bool(true))))
		p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", false, hostOf(up))}, Extensions: lifeRegistry(t, tr)})
		status, _, _ := do(t, client(), "GET", p.url("/x"), nil, map[string]string{"x-deny": "1"})
		if status != 403 {
			t.Errorf("status %d, want the deny filter's 403", status)
		}
		if got := seen(); len(got) != 0 {
			t.Errorf("the upstream saw %q, want nothing", got)
		}
		tr.settled(t, 1)
	})
	t.Run("shadow", func(t *testing.T) {
		tr := &attemptTracker{}
		up, _ := instanceRecorder(t, 0)
		sup, shadowSeen := instanceRecorder(t, 0)
		st := stats.NewStore()
		shadow := newFakeCluster(st, "shadow", false, hostOf(sup))
		chain, err := httpfilter.CompileUpstream("http_filters", upstreamFilters(life), httpfilter.Context{Extensions: lifeRegistry(t, tr), LookupByName: true})
		if err != nil {
			t.Fatal(err)
		}
		shadow.upFilters = chain
		mirror := func(a *routev3.RouteAction) {
			a.RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "shadow"}}
		}
		ups := fakeUpstreams{"up": newFakeCluster(st, "up", false, hostOf(up)), "shadow": shadow}
		p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up", mirror))), Deps{Stats: st, Upstreams: ups, Extensions: lifeRegistry(t, tr)})
		if status, _, _ := do(t, client(), "GET", p.url("/x"), nil, nil); status != 200 {
			t.Errorf("status %d, want 200", status)
		}
		eventually(t, "the shadow's request", func() bool { return len(shadowSeen()) == 1 })
		if got := shadowSeen()[0]; got != "1" {
			t.Errorf("the shadow got instance %q, want 1", got)
		}
		tr.settled(t, 1)
	})
}
