package healthcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// testChecker builds a checker of cfg (TCP kind, never started) with its
// event log in a temporary file, and a host synced into it.
func testChecker(t *testing.T, cfg Config, traffic bool) (*Checker, *session, *upstream.Host, string) {
	t.Helper()
	cfg.Kind = KindTCP
	cfg.tcp = &tcpConfig{}
	cfg.EventLogPath = filepath.Join(t.TempDir(), "events.log")
	store := stats.NewStore()
	c := New(&cfg, Env{
		Cluster:    "svc",
		Scope:      store.Scope("cluster.svc."),
		HadTraffic: func() bool { return traffic },
		Rand:       func() uint64 { return 0 },
	})
	c.openEvents()
	if c.events == nil {
		t.Fatal("event log not opened")
	}
	t.Cleanup(c.Stop)
	h := &upstream.Host{Address: "127.0.0.1:8080", Cluster: "svc"}
	c.Sync([]*upstream.Host{h})
	return c, c.sessions[h.Address], h, cfg.EventLogPath
}

func baseConfig() Config {
	return Config{
		Timeout: time.Second, Interval: 10 * time.Second,
		UnhealthyThreshold: 3, HealthyThreshold: 2, ReuseConnection: true,
		NoTrafficInterval: 60 * time.Second, NoTrafficHealthyInterval: 60 * time.Second,
		UnhealthyInterval: 10 * time.Second, UnhealthyEdgeInterval: 10 * time.Second,
		HealthyEdgeInterval: 10 * time.Second,
	}
}

// events reads the event log's lines as maps.
func events(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestNewHostStartsFailed(t *testing.T) {
	c, _, h, _ := testChecker(t, baseConfig(), true)
	if !h.HasHealthFlag(upstream.FailedActiveHC) || h.Healthy() {
		t.Fatalf("a new host is failed until checked: flags %b", h.HealthFlags())
	}
	if got := c.stats.healthy.Value(); got != 0 {
		t.Fatalf("healthy gauge %d, want 0", got)
	}
}

func TestThresholds(t *testing.T) {
	c, s, h, log := testChecker(t, baseConfig(), true)
	// The first check ever passes a host at once.
	s.apply(result{outcome: outcomeSuccess})
	if !h.Healthy() || c.stats.healthy.Value() != 1 {
		t.Fatalf("first success: healthy=%v gauge=%d", h.Healthy(), c.stats.healthy.Value())
	}
	// Network failures count to unhealthy_threshold (3).
	for i := 0; i < 2; i++ {
		s.apply(result{outcome: outcomeNetwork})
		if !h.Healthy() {
			t.Fatalf("failed after %d network failures, threshold 3", i+1)
		}
	}
	s.apply(result{outcome: outcomeNetwork})
	if h.Healthy() || c.stats.healthy.Value() != 0 {
		t.Fatal("still healthy after 3 network failures")
	}
	// healthy_threshold (2) successes in a row bring it back; a failure
	// in between starts over.
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeNetwork})
	s.apply(result{outcome: outcomeSuccess})
	if h.Healthy() {
		t.Fatal("healthy after 1 success in a row, threshold 2")
	}
	s.apply(result{outcome: outcomeSuccess})
	if !h.Healthy() {
		t.Fatal("not healthy after 2 successes in a row")
	}
	if got := c.stats.success.Value(); got != 4 {
		t.Errorf("success = %d, want 4", got)
	}
	if got, net := c.stats.failure.Value(), c.stats.networkFailure.Value(); got != 4 || net != 4 {
		t.Errorf("failure = %d network_failure = %d, want 4 and 4", got, net)
	}
	ev := events(t, log)
	var kinds []string
	for _, e := range ev {
		for _, k := range []string{"add_healthy_event", "eject_unhealthy_event", "health_check_failure_event"} {
			if _, ok := e[k]; ok {
				kinds = append(kinds, k)
			}
		}
		if e["cluster_name"] != "svc" || e["health_checker_type"] != "TCP" {
			t.Errorf("event %v: want cluster_name svc, health_checker_type TCP", e)
		}
	}
	want := []string{"add_healthy_event", "eject_unhealthy_event", "add_healthy_event"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if ej := ev[1]["eject_unhealthy_event"].(map[string]any); ej["failure_type"] != "NETWORK" {
		t.Errorf("eject %v, want failure_type NETWORK", ej)
	}
}

func TestActiveFailureIgnoresThreshold(t *testing.T) {
	_, s, h, log := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeSuccess})
	// A retriable status counts like a network failure...
	s.apply(result{outcome: outcomeRetriable, status: 503})
	if !h.Healthy() {
		t.Fatal("one retriable status failed the host, threshold 3")
	}
	// ...an unexpected status fails it at once.
	s.apply(result{outcome: outcomeFailed, status: 500})
	if h.Healthy() {
		t.Fatal("an unexpected status did not fail the host")
	}
	ev := events(t, log)
	ej := ev[len(ev)-1]["eject_unhealthy_event"].(map[string]any)
	if ej["failure_type"] != "ACTIVE" || ej["http_status_code"] != float64(500) {
		t.Errorf("eject %v, want ACTIVE 500", ej)
	}
}

func TestFirstFailureIsLogged(t *testing.T) {
	_, s, h, log := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeNetwork})
	if h.Healthy() {
		t.Fatal("a host failing its first check is healthy")
	}
	ev := events(t, log)
	if len(ev) != 1 {
		t.Fatalf("events %v, want one failure event", ev)
	}
	f, ok := ev[0]["health_check_failure_event"].(map[string]any)
	if !ok || f["first_check"] != true || f["failure_type"] != "NETWORK" {
		t.Fatalf("event %v, want a first-check NETWORK failure", ev[0])
	}
}

func TestTimeoutFlag(t *testing.T) {
	cfg := baseConfig()
	cfg.UnhealthyThreshold = 1
	_, s, h, _ := testChecker(t, cfg, true)
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeTimeout})
	if h.Healthy() || !h.HasHealthFlag(upstream.ActiveHCTimeout) {
		t.Fatalf("after a timeout: flags %b, want failed and timeout", h.HealthFlags())
	}
	// A failure for another reason clears the timeout flag.
	s.apply(result{outcome: outcomeFailed, status: 503})
	if h.HasHealthFlag(upstream.ActiveHCTimeout) {
		t.Fatal("timeout flag kept after a non-timeout failure")
	}
	s.apply(result{outcome: outcomeTimeout})
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeSuccess})
	if !h.Healthy() || h.HasHealthFlag(upstream.ActiveHCTimeout) {
		t.Fatalf("after recovery: flags %b", h.HealthFlags())
	}
}

func TestDegraded(t *testing.T) {
	c, s, h, log := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeDegraded})
	if !h.Healthy() || !h.Degraded() || c.stats.degraded.Value() != 1 {
		t.Fatalf("degraded success: healthy=%v degraded=%v gauge=%d", h.Healthy(), h.Degraded(), c.stats.degraded.Value())
	}
	s.apply(result{outcome: outcomeSuccess})
	if h.Degraded() || c.stats.degraded.Value() != 0 {
		t.Fatal("still degraded after a plain success")
	}
	var kinds []string
	for _, e := range events(t, log) {
		for _, k := range []string{"add_healthy_event", "degraded_healthy_host", "no_longer_degraded_host"} {
			if _, ok := e[k]; ok {
				kinds = append(kinds, k)
			}
		}
	}
	if got := strings.Join(kinds, ","); got != "add_healthy_event,degraded_healthy_host,no_longer_degraded_host" {
		t.Errorf("events %s", got)
	}
}

func TestImmediateFail(t *testing.T) {
	_, s, h, _ := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeFailed, status: 503, immediateFail: true})
	if h.Healthy() || !h.HasHealthFlag(upstream.ExcludedViaImmediateHCFail) {
		t.Fatalf("flags %b, want failed and excluded via immediate fail", h.HealthFlags())
	}
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeSuccess})
	if !h.Healthy() || h.HasHealthFlag(upstream.ExcludedViaImmediateHCFail) {
		t.Fatalf("after recovery: flags %b", h.HealthFlags())
	}
}

func TestAlwaysLog(t *testing.T) {
	cfg := baseConfig()
	cfg.AlwaysLogFailures, cfg.AlwaysLogSuccess = true, true
	_, s, _, log := testChecker(t, cfg, true)
	s.apply(result{outcome: outcomeSuccess}) // add_healthy
	s.apply(result{outcome: outcomeSuccess}) // successful
	s.apply(result{outcome: outcomeNetwork}) // failure (pending)
	ev := events(t, log)
	if len(ev) != 3 {
		t.Fatalf("events %v, want 3", ev)
	}
	if _, ok := ev[1]["successful_health_check_event"]; !ok {
		t.Errorf("event %v, want successful_health_check_event", ev[1])
	}
	if f, ok := ev[2]["health_check_failure_event"].(map[string]any); !ok || f["first_check"] != false {
		t.Errorf("event %v, want a failure event not on the first check", ev[2])
	}
}

func TestIntervals(t *testing.T) {
	cfg := baseConfig()
	cfg.Interval = 1 * time.Second
	cfg.UnhealthyInterval = 2 * time.Second
	cfg.UnhealthyEdgeInterval = 3 * time.Second
	cfg.HealthyEdgeInterval = 4 * time.Second
	cfg.NoTrafficInterval = 5 * time.Second
	cfg.NoTrafficHealthyInterval = 6 * time.Second
	for _, tc := range []struct {
		traffic, healthy bool
		t                transition
		want             time.Duration
	}{
		{true, true, unchanged, 1 * time.Second},
		{true, true, changed, 1 * time.Second},
		{true, false, unchanged, 2 * time.Second},
		{true, false, changePending, 3 * time.Second},
		{true, true, changePending, 4 * time.Second},
		{false, false, unchanged, 5 * time.Second},
		{false, true, changePending, 5 * time.Second},
		{false, true, unchanged, 6 * time.Second},
	} {
		c, _, _, _ := testChecker(t, cfg, tc.traffic)
		if got := c.interval(tc.healthy, tc.t); got != tc.want {
			t.Errorf("traffic=%v healthy=%v transition=%d: %v, want %v", tc.traffic, tc.healthy, tc.t, got, tc.want)
		}
	}
}

func TestJitterBounds(t *testing.T) {
	cfg := baseConfig()
	cfg.IntervalJitter = 100 * time.Millisecond
	cfg.IntervalJitterPercent = 10
	c, _, _, _ := testChecker(t, cfg, true)
	var n uint64
	c.env.Rand = func() uint64 { n = n*6364136223846793005 + 1442695040888963407; return n }
	base := time.Second
	seenLow, seenHigh := false, false
	for i := 0; i < 2000; i++ {
		d := c.withJitter(base, cfg.IntervalJitter)
		// percent jitter below 10% of base, plus interval jitter below
		// 100 ms.
		if d < base || d >= base+100*time.Millisecond+100*time.Millisecond {
			t.Fatalf("jittered interval %v out of [1s, 1.2s)", d)
		}
		seenLow = seenLow || d < base+50*time.Millisecond
		seenHigh = seenHigh || d > base+150*time.Millisecond
	}
	if !seenLow || !seenHigh {
		t.Errorf("jitter does not spread: low seen %v, high seen %v", seenLow, seenHigh)
	}
	// Never below 1 ms, even at 0.
	if d := c.withJitter(0, 0); d != time.Millisecond {
		t.Errorf("withJitter(0, 0) = %v, want 1ms", d)
	}
}

func TestSyncKeepsHealthByAddress(t *testing.T) {
	c, s, h, _ := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeSuccess})
	s.apply(result{outcome: outcomeDegraded})
	// The same address as a new host object (an EDS update) keeps the
	// session and the health; a new address starts failed.
	h2 := &upstream.Host{Address: h.Address}
	other := &upstream.Host{Address: "127.0.0.1:9090"}
	c.Sync([]*upstream.Host{h2, other})
	if !h2.Healthy() || !h2.Degraded() {
		t.Fatalf("kept host lost its health: flags %b", h2.HealthFlags())
	}
	if c.sessions[h.Address] != s || s.hosts[0] != h2 {
		t.Fatal("kept address did not keep its session, or the session checks the old host")
	}
	if other.Healthy() {
		t.Fatal("new host is not failed")
	}
	if c.stats.healthy.Value() != 1 || c.stats.degraded.Value() != 1 {
		t.Fatalf("gauges healthy=%d degraded=%d, want 1 and 1", c.stats.healthy.Value(), c.stats.degraded.Value())
	}
	// Removing the healthy host takes it out of the gauges.
	c.Sync([]*upstream.Host{other})
	if len(c.sessions) != 1 || c.stats.healthy.Value() != 0 || c.stats.degraded.Value() != 0 {
		t.Fatalf("after removal: %d sessions, healthy=%d degraded=%d", len(c.sessions), c.stats.healthy.Value(), c.stats.degraded.Value())
	}
	select {
	case <-s.firstDone:
	default:
		t.Fatal("a removed session still counts as waiting for its first check")
	}
}

func TestImmediateFailFromTraffic(t *testing.T) {
	c, s, h, log := testChecker(t, baseConfig(), true)
	s.apply(result{outcome: outcomeSuccess})
	c.ImmediateFail(h)
	if h.Healthy() || !h.HasHealthFlag(upstream.ExcludedViaImmediateHCFail) {
		t.Fatalf("flags %b, want failed and excluded", h.HealthFlags())
	}
	if c.stats.passiveFailure.Value() != 1 || c.stats.networkFailure.Value() != 0 {
		t.Errorf("passive_failure %d network_failure %d", c.stats.passiveFailure.Value(), c.stats.networkFailure.Value())
	}
	ev := events(t, log)
	if ej := ev[len(ev)-1]["eject_unhealthy_event"].(map[string]any); ej["failure_type"] != "PASSIVE" {
		t.Errorf("eject %v, want PASSIVE", ej)
	}
	// A host the checker does not know is left alone.
	stranger := &upstream.Host{Address: "127.0.0.1:1"}
	c.ImmediateFail(stranger)
	if stranger.HealthFlags() != 0 {
		t.Error("an unknown host got flags")
	}
}

func TestPassedHookOnlyForHostsTheCheckPasses(t *testing.T) {
	c, s, h, _ := testChecker(t, baseConfig(), true)
	var passed []*upstream.Host
	c.env.Passed = func(p *upstream.Host) { passed = append(passed, p) }
	// The first check ever passes the host at once.
	s.apply(result{outcome: outcomeSuccess})
	if len(passed) != 1 || passed[0] != h {
		t.Fatalf("passed = %v after a success, want the host once", passed)
	}
	passed = nil
	for range 3 {
		s.apply(result{outcome: outcomeNetwork})
	}
	if len(passed) != 0 {
		t.Fatalf("failed checks reported %d passed hosts", len(passed))
	}
	// Failed by active checking, one success of healthy_threshold (2)
	// does not pass it yet.
	s.apply(result{outcome: outcomeSuccess})
	if len(passed) != 0 {
		t.Fatal("a host still failed by active checking was reported passed")
	}
	s.apply(result{outcome: outcomeSuccess})
	if len(passed) != 1 {
		t.Fatalf("passed = %v after healthy_threshold successes, want the host", passed)
	}
}
