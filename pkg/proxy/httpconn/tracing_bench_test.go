package httpconn

import (
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// collectorDialer reaches an in-process OTLP/HTTP collector.
type collectorDialer = grpcservicetest.Dialer

// benchmarkTracing is BenchmarkProxyHTTP1 with tracing at a random
// sampling percentage (none when pct is negative), spans exported by the
// OpenTelemetry tracer over OTLP/HTTP with Envoy's default batching (every
// 5 spans), and clients concurrent connections.
func benchmarkTracing(b *testing.B, pct float64, clients int) {
	// The collector costs as little as the upstream: it reads each export
	// and answers 200 without looking at it.
	collector := fixedUpstream(b)
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	cfg := hcm(routeConfig(clusterRoute("/", "bench")))
	if pct >= 0 {
		cfg.Tracing = &hcmv3.HttpConnectionManager_Tracing{
			RandomSampling: &typev3.Percent{Value: pct},
			Provider: &tracev3.Tracing_Http{
				Name: "envoy.tracers.opentelemetry",
				ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: typed(&tracev3.OpenTelemetryConfig{
					HttpService: &corev3.HttpService{HttpUri: &corev3.HttpUri{
						Uri:              "http://collector/v1/traces",
						HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "otlp"},
						Timeout:          durationpb.New(time.Second),
					}},
				})},
			},
		}
	}
	p := startProxy(b, cfg, Deps{
		Stats: st, Upstreams: fakeUpstreams{"bench": cl},
		Tracing: tracing.Context{Stats: st, Cluster: func(string) grpcservice.Cluster {
			return collectorDialer(collector)
		}},
	})
	const request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n"
	// CPU time per request says what requests/s a busy proxy loses,
	// whatever else the machine runs meanwhile (wall time does not).
	cpu0 := cpuTime(b)
	if clients == 1 {
		bc := newBenchClient(b, p.addr, request)
		bc.roundTrip(b) // warm the buffers and the upstream pool
		b.ReportAllocs()
		for b.Loop() {
			bc.roundTrip(b)
		}
	} else {
		b.SetParallelism(clients)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			bc := newBenchClient(b, p.addr, request)
			for pb.Next() {
				bc.roundTrip(b)
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(st.Scope("tracing.opentelemetry.").Counter("spans_dropped").Value())/float64(b.N), "dropped/op")
}

// BenchmarkTracing compares one keep-alive client, and 16 concurrent ones
// per core, proxied without tracing and with 1% and 100% of the requests
// traced.
func BenchmarkTracing(b *testing.B) {
	for _, c := range []struct {
		name    string
		pct     float64
		clients int
	}{
		{"off/serial", -1, 1}, {"1pct/serial", 1, 1}, {"100pct/serial", 100, 1},
		{"off/parallel", -1, 16}, {"1pct/parallel", 1, 16}, {"100pct/parallel", 100, 16},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkTracing(b, c.pct, c.clients) })
	}
}

// cpuTime is the CPU time (user and system) the process has used: the
// client, proxy, upstream and collector, which all run in it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUnsampledInject is an unsampled request's W3C propagation into
// the request's fields as the benchmark client's request has them: the
// start's pass, a field the router appends after it, and the traceparent
// set through the pass (startHeaders.SetDel), against the search of every
// field (headerList.SetDel), and against the field added after the pass's
// check alone (startHeaders.noW3C), as the connection manager does. None
// allocates.
func BenchmarkUnsampledInject(b *testing.B) {
	base := []field{
		{"user-agent", "h1count"}, {"accept", "*/*"}, {"x-forwarded-proto", "http"},
		{"x-request-id", "7e0a4c1a-3a5e-4b8e-9f0c-2d1b6a7c8e9f"},
	}
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	run := func(b *testing.B, inject func(th *startHeaders, h *headerList)) {
		var h headerList
		h.fields = make([]field, 0, 8)
		var th startHeaders
		b.ReportAllocs()
		for b.Loop() {
			h.fields = append(h.fields[:0], base...)
			th.find(&h, startHeaderTable)
			h.Set("x-envoy-expected-rq-timeout-ms", "15000")
			inject(&th, &h)
		}
		if v, _ := h.Get("traceparent"); v != tp {
			b.Fatalf("traceparent %q", v)
		}
	}
	b.Run("pass", func(b *testing.B) {
		run(b, func(th *startHeaders, _ *headerList) { th.SetDel("traceparent", tp, "tracestate") })
	})
	b.Run("direct", func(b *testing.B) {
		// injectTrace's own: the field added when the pass tells the
		// request has no W3C fields.
		run(b, func(th *startHeaders, h *headerList) {
			if !th.noW3C() {
				b.Fatal("the request's W3C fields not told apart")
			}
			h.Add(headerTraceparent, tp)
		})
	})
	b.Run("search", func(b *testing.B) {
		run(b, func(_ *startHeaders, h *headerList) { h.SetDel("traceparent", tp, "tracestate") })
	})
}
