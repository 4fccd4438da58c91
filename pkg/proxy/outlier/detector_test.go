package outlier

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// rig is a detector over n hosts with a clock the test moves.
type rig struct {
	d       *Detector
	hosts   []*upstream.Host
	store   *stats.Store
	now     time.Time
	changes int
	rt      *runtime.Runtime
}

func newRig(t testing.TB, n int, od *clusterv3.OutlierDetection, events *EventLog) *rig {
	t.Helper()
	cfg, errs := ParseConfig(od)
	if len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		{Name: "admin", LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}}},
	}}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{store: stats.NewStore(), now: time.Unix(1000, 0), rt: rt}
	r.d = New(cfg, Deps{
		Cluster:       "up",
		Stats:         NewStats(r.store.Scope("cluster.up.")),
		Runtime:       rt.Snapshot,
		Now:           func() time.Time { return r.now },
		Rand:          func() uint64 { return 0 },
		HealthChanged: func() { r.changes++ },
		Events:        events,
	})
	for i := range n {
		r.hosts = append(r.hosts, &upstream.Host{Address: fmt.Sprintf("127.0.0.%d:80", i+1), Cluster: "up", Weight: 1})
	}
	r.d.SetHosts(r.hosts)
	return r
}

func (r *rig) counter(name string) uint64 {
	return r.store.Counter("cluster.up.outlier_detection." + name).Value()
}

func (r *rig) active() int64 {
	return r.store.Gauge("cluster.up.outlier_detection.ejections_active").Value()
}

func (r *rig) monitor(i int) *Monitor { return r.hosts[i].Outlier().(*Monitor) }

func (r *rig) put(i, code, times int) {
	for range times {
		r.hosts[i].Outlier().PutHTTPResponseCode(code)
	}
}

func ejected(h *upstream.Host) bool { return h.HasHealthFlag(upstream.FailedOutlierCheck) }

func TestConsecutive5xxEjectsAtThreshold(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(3), MaxEjectionPercent: wrapperspb.UInt32(50)}, nil)
	r.put(0, 500, 2)
	r.put(0, 200, 1) // a success resets the count
	r.put(0, 500, 2)
	if ejected(r.hosts[0]) {
		t.Fatal("ejected before 3 consecutive 5xx")
	}
	r.put(0, 503, 1)
	if !ejected(r.hosts[0]) || r.hosts[0].Healthy() {
		t.Fatal("not ejected after 3 consecutive 5xx")
	}
	if r.changes != 1 {
		t.Errorf("HealthChanged called %d times, want 1", r.changes)
	}
	for name, want := range map[string]uint64{
		"ejections_enforced_total": 1, "ejections_enforced_consecutive_5xx": 1, "ejections_detected_consecutive_5xx": 1,
		"ejections_total": 1, "ejections_consecutive_5xx": 1, "ejections_overflow": 0,
		"ejections_detected_consecutive_gateway_failure": 0,
	} {
		if got := r.counter(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if r.active() != 1 {
		t.Errorf("ejections_active = %d, want 1", r.active())
	}
}

func TestConsecutiveGatewayFailureDetectedNotEnforcedByDefault(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		ConsecutiveGatewayFailure: wrapperspb.UInt32(2), Consecutive_5Xx: wrapperspb.UInt32(10), MaxEjectionPercent: wrapperspb.UInt32(50),
	}, nil)
	r.put(0, 502, 1)
	r.put(0, 500, 1) // a 5xx that is not a gateway failure resets that count
	r.put(0, 504, 2)
	if ejected(r.hosts[0]) {
		t.Fatal("enforcing_consecutive_gateway_failure defaults to 0, yet the host was ejected")
	}
	if got := r.counter("ejections_detected_consecutive_gateway_failure"); got != 1 {
		t.Errorf("detected gateway failures %d, want 1", got)
	}
	if got := r.counter("ejections_enforced_consecutive_gateway_failure"); got != 0 {
		t.Errorf("enforced gateway failures %d, want 0", got)
	}
	if err := r.rt.Modify(map[string]string{"outlier_detection.enforcing_consecutive_gateway_failure": "100"}); err != nil {
		t.Fatal(err)
	}
	r.put(0, 503, 2)
	if !ejected(r.hosts[0]) {
		t.Fatal("enforcing 100 from the runtime: not ejected")
	}
}

func TestMaxEjectionPercent(t *testing.T) {
	// 10% of 3 hosts rounds to no host: Envoy ejects none (and counts
	// the overflow) unless always_eject_one_host.
	r := newRig(t, 3, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1)}, nil)
	r.put(0, 500, 1)
	if ejected(r.hosts[0]) || r.counter("ejections_overflow") != 1 {
		t.Fatalf("default 10%% of 3 hosts: ejected %v, overflow %d; want none ejected, 1 overflow", ejected(r.hosts[0]), r.counter("ejections_overflow"))
	}
	r = newRig(t, 3, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), AlwaysEjectOneHost: wrapperspb.Bool(true)}, nil)
	r.put(0, 500, 1)
	r.put(1, 500, 1)
	if !ejected(r.hosts[0]) || ejected(r.hosts[1]) {
		t.Fatalf("always_eject_one_host: ejected %v %v, want the first only", ejected(r.hosts[0]), ejected(r.hosts[1]))
	}
	r = newRig(t, 4, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(50)}, nil)
	for i := range 4 {
		r.put(i, 500, 1)
	}
	if r.active() != 2 || r.counter("ejections_overflow") != 2 {
		t.Fatalf("50%% of 4: active %d overflow %d, want 2 and 2", r.active(), r.counter("ejections_overflow"))
	}
}

func TestEjectionTimeGrowsAndShrinks(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100),
		Interval: durationpb.New(time.Second), BaseEjectionTime: durationpb.New(10 * time.Second), MaxEjectionTime: durationpb.New(25 * time.Second),
	}, nil)
	// ejectFor ejects host 0 and returns how long it stays out, in
	// interval ticks.
	ejectFor := func() time.Duration {
		r.put(0, 500, 1)
		if !ejected(r.hosts[0]) {
			t.Fatal("not ejected")
		}
		start := r.now
		for range 100 {
			r.now = r.now.Add(time.Second)
			r.d.Tick()
			if !ejected(r.hosts[0]) {
				return r.now.Sub(start)
			}
		}
		t.Fatal("never un-ejected")
		return 0
	}
	// base × times ejected, bounded by max_ejection_time.
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second, 25 * time.Second} {
		if got := ejectFor(); got != want {
			t.Fatalf("ejection %d lasted %s, want %s", i+1, got, want)
		}
	}
	// The multiplier stopped at 4 (it grows while base × multiplier is
	// below max + base). Each interval in service takes one step off:
	// after 3 it is 1, and the next ejection makes it 2: 20s.
	for range 3 {
		r.now = r.now.Add(time.Second)
		r.d.Tick()
	}
	if got := ejectFor(); got != 20*time.Second {
		t.Fatalf("after two healthy intervals the ejection lasted %s, want 20s", got)
	}
	if r.monitor(0).numEjections != 5 {
		t.Errorf("num ejections %d, want 5", r.monitor(0).numEjections)
	}
}

func TestEjectionTimeJitter(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100),
		BaseEjectionTime: durationpb.New(time.Second), MaxEjectionTimeJitter: durationpb.New(time.Second),
	}, nil)
	r.d.deps.Rand = func() uint64 { return 700 }
	r.put(0, 500, 1)
	r.now = r.now.Add(1500 * time.Millisecond)
	r.d.Tick()
	if !ejected(r.hosts[0]) {
		t.Fatal("un-ejected before base + jitter (1.7s)")
	}
	r.now = r.now.Add(200 * time.Millisecond)
	r.d.Tick()
	if ejected(r.hosts[0]) {
		t.Fatal("still ejected after base + jitter")
	}
}

// TestSuccessRateMath checks the threshold against Envoy's documented
// example: rates {50, 100, 100, 100, 100} have mean 90 and standard
// deviation 20, so a factor of 1.9 gives 52.
func TestSuccessRateMath(t *testing.T) {
	rates := []hostRate{{rate: 50}, {rate: 100}, {rate: 100}, {rate: 100}, {rate: 100}}
	mean, thr := ejectionThreshold(450, rates, 1.9)
	if mean != 90 || math.Abs(thr-52) > 1e-9 {
		t.Fatalf("mean %v threshold %v, want 90 and 52", mean, thr)
	}
}

func TestSuccessRateEjection(t *testing.T) {
	r := newRig(t, 5, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1000), MaxEjectionPercent: wrapperspb.UInt32(100),
		SuccessRateRequestVolume: wrapperspb.UInt32(10),
	}, nil)
	for i := range 5 {
		r.put(i, 200, 10)
	}
	r.put(0, 500, 10)
	// The sweep evaluates the interval that just ended: rates 50 and
	// four 100s, threshold 52.
	r.d.Tick()
	if !ejected(r.hosts[0]) {
		t.Fatal("host at 50% not ejected")
	}
	if got := r.d.SuccessRateAverage(false); got != 90 {
		t.Errorf("average %v, want 90", got)
	}
	if got := r.d.SuccessRateEjectionThreshold(false); math.Abs(got-52) > 1e-9 {
		t.Errorf("threshold %v, want 52", got)
	}
	if got := r.monitor(1).SuccessRate(); got != 100 {
		t.Errorf("host 1 success rate %v, want 100", got)
	}
	if r.counter("ejections_enforced_success_rate") != 1 || r.counter("ejections_detected_success_rate") != 1 || r.counter("ejections_success_rate") != 1 {
		t.Error("success-rate stats not counted")
	}
	// The next interval has no requests: the figures go back to -1.
	r.now = r.now.Add(time.Second)
	r.d.Tick()
	if r.d.SuccessRateAverage(false) != -1 || r.monitor(1).SuccessRate() != -1 {
		t.Error("success rates kept from an interval without requests")
	}
}

func TestSuccessRateNeedsMinimumHosts(t *testing.T) {
	r := newRig(t, 4, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1000), MaxEjectionPercent: wrapperspb.UInt32(100), SuccessRateRequestVolume: wrapperspb.UInt32(10),
	}, nil)
	for i := range 4 {
		r.put(i, 200, 10)
	}
	r.put(0, 500, 90)
	r.d.Tick()
	r.d.Tick()
	if ejected(r.hosts[0]) || r.d.SuccessRateAverage(false) != -1 {
		t.Fatal("4 hosts are fewer than success_rate_minimum_hosts 5: nothing is computed")
	}
}

func TestFailurePercentage(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1000), MaxEjectionPercent: wrapperspb.UInt32(100),
		EnforcingFailurePercentage: wrapperspb.UInt32(100), FailurePercentageMinimumHosts: wrapperspb.UInt32(2),
		FailurePercentageRequestVolume: wrapperspb.UInt32(10), FailurePercentageThreshold: wrapperspb.UInt32(50),
	}, nil)
	r.put(0, 200, 5)
	r.put(0, 500, 5) // 50% failures: at the threshold
	r.put(1, 200, 6)
	r.put(1, 500, 4) // 40%
	r.d.Tick()
	if !ejected(r.hosts[0]) || ejected(r.hosts[1]) {
		t.Fatalf("ejected %v %v, want only the host at 50%% failures", ejected(r.hosts[0]), ejected(r.hosts[1]))
	}
	if r.counter("ejections_enforced_failure_percentage") != 1 || r.counter("ejections_detected_failure_percentage") != 1 {
		t.Error("failure-percentage stats not counted")
	}
}

func TestSplitLocalOrigin(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{
		SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailure: wrapperspb.UInt32(2), Consecutive_5Xx: wrapperspb.UInt32(2),
		MaxEjectionPercent: wrapperspb.UInt32(100),
	}, nil)
	h := r.hosts[0].Outlier()
	h.PutResult(upstream.LocalOriginConnectFailed, 0)
	h.PutResult(upstream.LocalOriginConnectSuccess, 0) // resets the local count
	h.PutResult(upstream.LocalOriginTimeout, 0)
	if ejected(r.hosts[0]) || r.monitor(0).consecutive5xx.Load() != 0 {
		t.Fatal("split: local failures must not count as 5xx")
	}
	h.PutResult(upstream.LocalOriginConnectFailed, 0)
	if !ejected(r.hosts[0]) || r.counter("ejections_enforced_consecutive_local_origin_failure") != 1 {
		t.Fatal("split: 2 consecutive local failures did not eject")
	}
	// Without split, a connect failure is a 503 and a timeout a 504.
	r = newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(2), MaxEjectionPercent: wrapperspb.UInt32(100)}, nil)
	h = r.hosts[0].Outlier()
	h.PutResult(upstream.LocalOriginConnectFailed, 0)
	h.PutResult(upstream.LocalOriginConnectSuccess, 0) // says nothing
	h.PutResult(upstream.LocalOriginTimeout, 0)
	if !ejected(r.hosts[0]) {
		t.Fatal("no split: connect failure then timeout are two 5xx")
	}
}

func TestHostsKeptAcrossUpdates(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100)}, nil)
	r.put(0, 500, 1)
	m := r.monitor(0)
	// An EDS update: new host objects at the same addresses, and a new
	// one.
	next := []*upstream.Host{
		{Address: r.hosts[0].Address}, {Address: r.hosts[1].Address}, {Address: "127.0.0.9:80"},
	}
	r.d.SetHosts(next)
	if next[0].Outlier() != m || !ejected(next[0]) {
		t.Fatal("the host kept across the update lost its monitor or its ejection")
	}
	if next[2].Outlier() == nil {
		t.Fatal("the new host has no monitor")
	}
	// Removing the ejected host drops it from ejections_active.
	r.d.SetHosts(next[1:])
	if r.active() != 0 {
		t.Errorf("ejections_active %d after the ejected host left, want 0", r.active())
	}
}

func TestActiveHealthCheckUnejects(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100)}, nil)
	r.put(0, 500, 1)
	r.d.ActiveHealthCheckPassed(r.hosts[0])
	if ejected(r.hosts[0]) || r.active() != 0 {
		t.Fatal("a passed active health check did not un-eject")
	}
	r = newRig(t, 2, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100),
		SuccessfulActiveHealthCheckUnejectHost: wrapperspb.Bool(false),
	}, nil)
	r.put(0, 500, 1)
	r.d.ActiveHealthCheckPassed(r.hosts[0])
	if !ejected(r.hosts[0]) {
		t.Fatal("successful_active_health_check_uneject_host false: un-ejected anyway")
	}
	var nilDetector *Detector
	nilDetector.ActiveHealthCheckPassed(r.hosts[0])
}

func TestEventLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.log")
	l, err := OpenEventLog(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100), BaseEjectionTime: durationpb.New(time.Second)}, l)
	r.put(0, 500, 1)
	// Rotated: the un-ejection goes to a new file at the path.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	r.now = r.now.Add(2 * time.Second)
	r.d.Tick()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rotated, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	current, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(rotated, []byte("\n")) != 1 || bytes.Count(current, []byte("\n")) != 1 {
		t.Fatalf("rotated file %q, new file %q: want one event each", rotated, current)
	}
	var events []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(append(rotated, current...)))
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(", ")) {
			t.Errorf("spaced line %q (Envoy prints compact JSON)", sc.Text())
		}
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 {
		t.Fatalf("%d events, want 2", len(events))
	}
	ej, un := events[0], events[1]
	if ej["action"] != "EJECT" || ej["type"] != "CONSECUTIVE_5XX" || ej["enforced"] != true || ej["cluster_name"] != "up" ||
		ej["upstream_url"] != "127.0.0.1:80" || ej["num_ejections"] != float64(1) || ej["eject_consecutive_event"] == nil {
		t.Errorf("eject event %v", ej)
	}
	if _, ok := ej["secs_since_last_action"]; ok {
		t.Errorf("first ejection has a previous action: %v", ej)
	}
	if un["action"] != "UNEJECT" || un["secs_since_last_action"] != "2" {
		t.Errorf("uneject event %v", un)
	}
}

func TestParseConfigErrors(t *testing.T) {
	_, errs := ParseConfig(&clusterv3.OutlierDetection{
		MaxEjectionPercent: wrapperspb.UInt32(101), BaseEjectionTime: durationpb.New(time.Minute), MaxEjectionTime: durationpb.New(time.Second),
		Interval: durationpb.New(0),
	})
	want := map[string]bool{"max_ejection_percent": true, "max_ejection_time": true, "interval": true}
	for _, err := range errs {
		ce := err.(*ConfigError)
		if !want[ce.Path] {
			t.Errorf("unexpected error %v", err)
		}
		delete(want, ce.Path)
	}
	if len(want) > 0 {
		t.Errorf("missing errors for %v", want)
	}
	c, errs := ParseConfig(&clusterv3.OutlierDetection{BaseEjectionTime: durationpb.New(time.Hour)})
	if len(errs) > 0 || c.MaxEjectionTime != time.Hour || c.Consecutive5xx != 5 || c.EnforcingConsecutiveGateway != 0 || c.SuccessRateStdevFactor != 1900 {
		t.Errorf("defaults: %+v %v", c, errs)
	}
}

// TestConcurrentReports runs reports from many goroutines while sweeps and
// membership updates happen (for the race detector), and checks the
// ejection count stays consistent.
func TestConcurrentReports(t *testing.T) {
	r := newRig(t, 4, &clusterv3.OutlierDetection{
		Consecutive_5Xx: wrapperspb.UInt32(3), MaxEjectionPercent: wrapperspb.UInt32(100),
		SuccessRateMinimumHosts: wrapperspb.UInt32(2), SuccessRateRequestVolume: wrapperspb.UInt32(5),
	}, nil)
	r.d.deps.Now = time.Now
	r.d.deps.HealthChanged = nil
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := r.hosts[g].Outlier()
			for i := range 2000 {
				if i%3 == 0 {
					h.PutHTTPResponseCode(503)
				} else {
					h.PutHTTPResponseCode(200)
				}
				h.PutResult(upstream.LocalOriginConnectFailed, 0)
			}
		}()
	}
	go func() {
		defer close(done)
		for range 50 {
			r.d.Tick()
			r.d.SetHosts(r.hosts)
		}
	}()
	wg.Wait()
	<-done
	ejectedNow := 0
	for _, h := range r.hosts {
		if ejected(h) {
			ejectedNow++
		}
	}
	if int64(ejectedNow) != r.active() {
		t.Fatalf("%d hosts flagged, ejections_active %d", ejectedNow, r.active())
	}
}

// TestHostKeptBesideNewObject: a host that stays keeps its monitor even
// when a new object at its address comes first in the update.
func TestHostKeptBesideNewObject(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{}, nil)
	m := r.monitor(0)
	twin := &upstream.Host{Address: r.hosts[0].Address}
	r.d.SetHosts([]*upstream.Host{twin, r.hosts[0], r.hosts[1]})
	if r.hosts[0].Outlier() != m || twin.Outlier() == m || twin.Outlier() == nil {
		t.Fatal("the staying host lost its monitor to the new object at its address")
	}
}

// TestEjectedHook: an ejection hands its host to Deps.Ejected (the
// cluster closes its connections then).
func TestEjectedHook(t *testing.T) {
	r := newRig(t, 2, &clusterv3.OutlierDetection{Consecutive_5Xx: wrapperspb.UInt32(1), MaxEjectionPercent: wrapperspb.UInt32(100)}, nil)
	got := make(chan *upstream.Host, 2)
	r.d.deps.Ejected = func(h *upstream.Host) { got <- h }
	r.put(1, 503, 1)
	select {
	case h := <-got:
		if h != r.hosts[1] {
			t.Fatalf("Ejected got %s, want %s", h.Address, r.hosts[1].Address)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ejected never called")
	}
}
