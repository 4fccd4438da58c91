package httpconn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// trackedCluster is a cluster of srv's host keeping the histograms of
// track_cluster_stats.
func trackedCluster(t *testing.T, st *stats.Store, srv *httptest.Server, upstreamH2 bool) *fakeCluster {
	t.Helper()
	fc := newFakeCluster(st, "up", upstreamH2, hostOf(srv))
	fc.stats.Tracked = upstream.NewTrackedStats(st.Scope("cluster.up."), true, true)
	t.Cleanup(fc.closeIdle)
	return fc
}

// histogram returns the cumulative statistics of the store's histogram
// name, merged first.
func histogram(st *stats.Store, name string) stats.HistogramStatistics {
	st.MergeHistograms()
	return st.Histogram(name).CumulativeStatistics()
}

// TestTrackedSizes checks request_response_sizes: each attempt records
// the bytes of the request's head and body and of the response's, over
// both upstream protocols.
func TestTrackedSizes(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-answer", "0123456789")
		_, _ = w.Write([]byte("hello world"))
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	for _, upstreamH2 := range []bool{false, true} {
		st := stats.NewStore()
		fc := trackedCluster(t, st, srv, upstreamH2)
		p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})
		status, _, body := do(t, client(), "POST", p.url("/x"), strings.NewReader("abcdefg"), map[string]string{"x-big": strings.Repeat("h", 300)})
		if status != 200 || body != "hello world" {
			t.Fatalf("h2 %v: %d %q", upstreamH2, status, body)
		}
		p.waitCounter(t, "cluster.up.upstream_rq_completed", 1)
		for name, want := range map[string][2]float64{
			"upstream_rq_body_size":    {7, 7},
			"upstream_rs_body_size":    {11, 11},
			"upstream_rq_headers_size": {305, 600},
			"upstream_rs_headers_size": {28, 200},
		} {
			h := histogram(st, "cluster.up."+name)
			// Values are binned: two significant digits.
			if h.SampleCount != 1 || h.SampleSum < want[0]*0.9 || h.SampleSum > want[1]*1.1 {
				t.Errorf("h2 %v: %s has %d values summing to %v, want one in [%v, %v]", upstreamH2, name, h.SampleCount, h.SampleSum, want[0], want[1])
			}
			if u := st.Histogram("cluster.up." + name).Unit(); u != stats.UnitBytes {
				t.Errorf("%s unit %v, want bytes", name, u)
			}
		}
	}
}

// TestTrackedTimeoutBudgets checks timeout_budgets: an attempt that
// reached its per-try timeout used all of it, and so did a request whose
// route timeout fired; a route without timeouts uses none of them.
func TestTrackedTimeoutBudgets(t *testing.T) {
	log := &eventLog{}
	hang := hedgeUpstream(t, log, "hang", 200, -1)
	st := stats.NewStore()
	fc := trackedCluster(t, st, hang, false)
	perTry := clusterRoute("/per-try", "up", func(a *routev3.RouteAction) {
		a.Timeout = durationpb.New(10 * time.Second)
		a.RetryPolicy = &routev3.RetryPolicy{
			RetryOn: "5xx", NumRetries: wrapperspb.UInt32(1), PerTryTimeout: durationpb.New(50 * time.Millisecond),
			RetryBackOff: &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(time.Millisecond)},
		}
	})
	route := clusterRoute("/route", "up", func(a *routev3.RouteAction) { a.Timeout = durationpb.New(50 * time.Millisecond) })
	p := startProxy(t, hcm(routeConfig(perTry, route)), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}})

	if status, _, _ := do(t, client(), "GET", p.url("/per-try"), nil, nil); status != 504 {
		t.Fatalf("/per-try: %d, want 504", status)
	}
	p.waitCounter(t, "cluster.up.upstream_rq_completed", 2)
	// Two attempts, each at least its 50 ms; the request a share of its
	// 10 s route timeout.
	if h := histogram(st, "cluster.up.upstream_rq_timeout_budget_per_try_percent_used"); h.SampleCount != 2 || h.SampleSum < 2*99 {
		t.Errorf("per-try budget: %d values summing to %v, want 2 of 100%% or more", h.SampleCount, h.SampleSum)
	}
	if h := histogram(st, "cluster.up.upstream_rq_timeout_budget_percent_used"); h.SampleCount != 1 || h.SampleSum >= 100 {
		t.Errorf("budget: %d values summing to %v, want one under 100%%", h.SampleCount, h.SampleSum)
	}

	if status, _, _ := do(t, client(), "GET", p.url("/route"), nil, nil); status != 504 {
		t.Fatalf("/route: %d, want 504", status)
	}
	p.waitCounter(t, "cluster.up.upstream_rq_completed", 3)
	// The route timeout's 100%; its one attempt had no per-try timeout
	// (infinite: 0%).
	if h := histogram(st, "cluster.up.upstream_rq_timeout_budget_percent_used"); h.SampleCount != 2 || h.SampleSum < 99 {
		t.Errorf("budget: %d values summing to %v, want a second of 100%%", h.SampleCount, h.SampleSum)
	}
	if h := histogram(st, "cluster.up.upstream_rq_timeout_budget_per_try_percent_used"); h.SampleCount != 3 {
		t.Errorf("per-try budget: %d values, want 3", h.SampleCount)
	}
}
