package httpconn

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// withRetries gives a route action a retry policy that successful
// requests never use: the cost of being retriable.
func withRetries(a *routev3.RouteAction) {
	a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx,reset,connect-failure", PerTryTimeout: durationpb.New(5e9)}
}

// BenchmarkProxyHTTP1Retries is BenchmarkProxyHTTP1 on a route with a
// retry policy.
func BenchmarkProxyHTTP1Retries(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench", withRetries))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
	bc := newBenchClient(b, p.addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n")
	bc.roundTrip(b)
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}

// BenchmarkProxyHTTP1PostRetries is BenchmarkProxyHTTP1Post on a route
// with a retry policy: the body is kept for a retry.
func BenchmarkProxyHTTP1PostRetries(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench", withRetries))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
	bc := newBenchClient(b, p.addr, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 128\r\n\r\n"+benchBody)
	bc.roundTrip(b)
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}
