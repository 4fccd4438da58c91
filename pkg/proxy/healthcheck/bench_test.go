package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// BenchmarkHTTP1Check is one HTTP/1.1 check on a kept connection and its
// result applied, as a session runs it (the upstream's share of the CPU
// is in the figure too).
func BenchmarkHTTP1Check(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	cfg, errs := Compile(healthCheck(func(hc *corev3.HealthCheck) {
		hc.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: &corev3.HealthCheck_HttpHealthCheck{Path: "/healthz"}}
	}), ClusterInfo{Name: "svc"})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	c := New(cfg, Env{Cluster: "svc", Scope: stats.NewStore().Scope("cluster.svc."), Dial: plainDial})
	defer c.Stop()
	c.Sync([]*upstream.Host{{Address: strings.TrimPrefix(srv.URL, "http://")}})
	var s *session
	for _, s = range c.sessions {
	}
	b.ReportAllocs()
	for b.Loop() {
		r := s.prober.probe(context.Background(), time.Now().Add(time.Second))
		if r.outcome != outcomeSuccess {
			b.Fatalf("check failed: %+v", r)
		}
		s.apply(r)
	}
}
