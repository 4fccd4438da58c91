package outlier

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestDetectDegradedHosts: with detect_degraded_hosts, x-envoy-degraded
// degrades a host (healthy still, not ejected) for base_ejection_time
// times its degradations, capped by max_ejection_time, cleared by the
// interval's sweep; the backoff shrinks with each interval the host
// stays undegraded. Without the setting nothing looks for the header.
func TestDetectDegradedHosts(t *testing.T) {
	if m := newRig(t, 2, &clusterv3.OutlierDetection{}, nil).monitor(0); m.DetectsDegraded() {
		t.Fatal("detect_degraded_hosts unset: DetectsDegraded")
	}
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		DetectDegradedHosts: wrapperspb.Bool(true),
		Interval:            durationpb.New(10 * time.Second),
		BaseEjectionTime:    durationpb.New(30 * time.Second),
		MaxEjectionTime:     durationpb.New(50 * time.Second),
	}, nil)
	m, h := r.monitor(0), r.hosts[0]
	if !m.DetectsDegraded() {
		t.Fatal("detect_degraded_hosts: not DetectsDegraded")
	}
	m.PutDegraded()
	if !h.Degraded() || !h.Healthy() || ejected(h) || r.changes != 1 || r.active() != 0 {
		t.Fatalf("after x-envoy-degraded: degraded %v healthy %v ejected %v changes %d active %d", h.Degraded(), h.Healthy(), ejected(h), r.changes, r.active())
	}
	m.PutDegraded()
	if r.changes != 1 {
		t.Error("a degraded host's second report changed its health")
	}
	step := func(d time.Duration) { r.now = r.now.Add(d); r.d.Tick() }
	step(20 * time.Second)
	if !h.Degraded() {
		t.Fatal("undegraded before base_ejection_time")
	}
	step(10 * time.Second)
	if h.Degraded() || r.changes != 2 {
		t.Fatalf("30s: degraded %v, changes %d; want undegraded, 2", h.Degraded(), r.changes)
	}
	// The second degradation at once lasts 2 x 30s, capped at 50s.
	m.PutDegraded()
	step(40 * time.Second)
	if !h.Degraded() {
		t.Fatal("second degradation over before 50s")
	}
	step(10 * time.Second)
	if h.Degraded() {
		t.Fatal("second degradation not over at max_ejection_time")
	}
	// Two intervals undegraded bring the backoff down to 0 again.
	step(10 * time.Second)
	step(10 * time.Second)
	if m.degradeBackoff != 0 {
		t.Errorf("backoff %d after two undegraded intervals, want 0", m.degradeBackoff)
	}
	// A removed host's report does nothing.
	r.d.SetHosts(r.hosts[1:])
	m.PutDegraded()
	if h.HasHealthFlag(upstream.DegradedOutlierDetection) {
		t.Error("a removed host was degraded")
	}
}
