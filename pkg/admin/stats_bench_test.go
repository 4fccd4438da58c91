package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Sizes of the render benchmarks: a million counters, named as 10,000
// clusters of 100 stats each, of which 10,000 are used.
const (
	benchClusters        = 10_000
	benchStatsPerCluster = 100
	benchUsedEvery       = 100
)

// millionCounterStore builds the benchmarks' store.
func millionCounterStore(b *testing.B) *stats.Store {
	b.Helper()
	if testing.Short() {
		b.Skip("a million counters take seconds to build")
	}
	s := stats.NewStore()
	i := 0
	for c := range benchClusters {
		sc := s.Scope(fmt.Sprintf("cluster.service_%05d.", c))
		for k := range benchStatsPerCluster {
			counter := sc.Counter(fmt.Sprintf("upstream_stat_%02d", k))
			if i%benchUsedEvery == 0 {
				counter.Inc()
			}
			i++
		}
	}
	return s
}

// discardWriter is a ResponseWriter that throws the body away.
type discardWriter struct {
	header http.Header
	n      int64
}

func (d *discardWriter) Header() http.Header { return d.header }
func (d *discardWriter) WriteHeader(int)     {}
func (d *discardWriter) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return len(p), nil
}

// BenchmarkStatsRender measures whole /stats requests through the admin
// handler (parameters, middleware, render) over a million counters.
func BenchmarkStatsRender(b *testing.B) {
	src := &fakeStats{rec: &recorder{}, store: millionCounterStore(b), useRE2: true}
	h := newStatsAdmin(b, src).Handler()
	for _, bc := range []struct{ name, target string }{
		{"text", "/stats"},
		{"json", "/stats?format=json"},
		{"prometheus", "/stats/prometheus"},
		{"usedonly", "/stats?usedonly"},
		{"filter-no-match", "/stats?filter=no_such_stat"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			b.ReportAllocs()
			var bytes int64
			for b.Loop() {
				w := &discardWriter{header: http.Header{}}
				h.ServeHTTP(w, req)
				bytes = w.n
				src.rec.take()
			}
			b.ReportMetric(float64(bytes), "body-bytes")
		})
	}
}

// liveServer answers /ready with LIVE.
type liveServer struct{}

func (liveServer) ServerInfo() *adminv3.ServerInfo { return &adminv3.ServerInfo{} }
func (liveServer) State() adminv3.ServerInfo_State { return adminv3.ServerInfo_LIVE }

// BenchmarkReadyDuringRender measures /ready latency on a real loopback
// listener while a client renders the million-counter /stats over and
// over: the readiness probe must not wait for renders.
func BenchmarkReadyDuringRender(b *testing.B) {
	src := &fakeStats{rec: &recorder{}, store: millionCounterStore(b), useRE2: true}
	a := New(Options{Server: liveServer{}, Stats: src, Log: (&logSink{}).logger()})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	ctx, stop := context.WithCancel(b.Context())
	var wg sync.WaitGroup
	var renders atomic.Int64
	streaming := make(chan struct{})
	var once sync.Once
	wg.Go(func() {
		client := &http.Client{Transport: &http.Transport{}}
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stats", nil)
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			renders.Add(1)
			once.Do(func() { close(streaming) })
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	// Measure only once a render is streaming.
	<-streaming

	probe := &http.Client{Transport: &http.Transport{}}
	var latencies []time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := probe.Get(srv.URL + "/ready")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("/ready answered %d", resp.StatusCode)
		}
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	p99 := latencies[(len(latencies)*99)/100]
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(float64(renders.Load()), "renders-started")
}
