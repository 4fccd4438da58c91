package httpconn

import (
	"net/http"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestRecordRouteResolutionStats checks record_route_resolution_stats:
// each request records one value in both histograms, its resolution time
// and its one resolution, when the stream ends.
func TestRecordRouteResolutionStats(t *testing.T) {
	st := stats.NewStore()
	cfg := hcm(routeConfig(directRoute("/d", 200, "hi")))
	cfg.RecordRouteResolutionStats = true
	p := startProxy(t, cfg, Deps{Stats: st})
	for _, path := range []string{"/d", "/d", "/none"} {
		_, _, _ = do(t, client(), http.MethodGet, p.url(path), nil, nil)
	}
	p.waitCounter(t, "http.test.downstream_rq_completed", 3)
	st.MergeHistograms()
	times := st.Histogram("http.test.downstream_rq_route_resolution_time_us")
	if times.Unit() != stats.UnitMicroseconds {
		t.Errorf("resolution time unit %v, want microseconds", times.Unit())
	}
	if got := times.CumulativeStatistics().SampleCount; got != 3 {
		t.Errorf("downstream_rq_route_resolution_time_us has %d values, want 3", got)
	}
	n := st.Histogram("http.test.downstream_rq_route_resolutions").CumulativeStatistics()
	if n.SampleCount != 3 || n.SampleSum < 3 || n.SampleSum > 3.5 {
		t.Errorf("downstream_rq_route_resolutions: %d values summing to %v, want 3 ones", n.SampleCount, n.SampleSum)
	}
}

// TestRouteResolutionStatsOff checks that without the field nothing is
// timed.
func TestRouteResolutionStatsOff(t *testing.T) {
	st := stats.NewStore()
	p := startProxy(t, hcm(routeConfig(directRoute("/d", 200, "hi"))), Deps{Stats: st})
	if p.m.routeResolution != nil {
		t.Fatal("route resolution stats kept without record_route_resolution_stats")
	}
}
