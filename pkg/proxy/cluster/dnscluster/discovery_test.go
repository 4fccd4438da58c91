//lint:file-ignore SA1019 the deprecated DNS fields are what configurations set

package dnscluster

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fakeResolver answers each name with the result set for it; a name
// without one blocks until the caller gives up.
type fakeResolver struct {
	mu      sync.Mutex
	results map[string]dns.Result
	calls   map[string]int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{results: map[string]dns.Result{}, calls: map[string]int{}}
}

func (f *fakeResolver) set(name string, r dns.Result) {
	f.mu.Lock()
	f.results[name] = r
	f.mu.Unlock()
}

func (f *fakeResolver) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeResolver) Resolve(ctx context.Context, name string, _ dns.Family) dns.Result {
	f.mu.Lock()
	f.calls[name]++
	r, ok := f.results[name]
	f.mu.Unlock()
	if !ok {
		<-ctx.Done()
		return dns.Result{Status: dns.Failed}
	}
	return r
}

// answer is a completed result with the given "ip" or "ip/ttl" addresses.
func answer(addrs ...string) dns.Result {
	r := dns.Result{Status: dns.Completed}
	for _, a := range addrs {
		ip, ttl, _ := strings.Cut(a, "/")
		d, _ := time.ParseDuration(ttl + "s")
		r.Addresses = append(r.Addresses, dns.Address{IP: netip.MustParseAddr(ip), TTL: d})
	}
	return r
}

var failed = dns.Result{Status: dns.Failed, Details: "timeout"}

// harness drives a Discovery by hand: apply() as a resolution would.
type harness struct {
	d         *Discovery
	store     *stats.Store
	published [][][]*upstream.Host
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{store: stats.NewStore()}
	sc := h.store.Scope("cluster.c.")
	st := Stats{
		UpdateAttempt:   sc.Counter("update_attempt"),
		UpdateSuccess:   sc.Counter("update_success"),
		UpdateFailure:   sc.Counter("update_failure"),
		UpdateNoRebuild: sc.Counter("update_no_rebuild"),
	}
	if cfg.RefreshRate == 0 {
		cfg.RefreshRate = DefaultRefreshRate
	}
	h.d = New("c", cfg, newFakeResolver(), st, func(p [][]*upstream.Host) {
		h.published = append(h.published, p)
	}, logr.Discard(), func() uint64 { return 7 })
	return h
}

func (h *harness) apply(i int, r dns.Result) time.Duration {
	return h.d.apply(i, r, dns.NewBackoffState(h.d.cfg.Failure, h.d.cfg.RefreshRate, h.d.rand))
}

func (h *harness) counter(name string) uint64 {
	return h.store.Scope("cluster.c.").Counter(name).Value()
}

// addresses renders the last published hosts: per level, "address" items.
func (h *harness) last() [][]string {
	if len(h.published) == 0 {
		return nil
	}
	var out [][]string
	for _, level := range h.published[len(h.published)-1] {
		items := []string{}
		for _, host := range level {
			items = append(items, host.Address)
		}
		out = append(out, items)
	}
	return out
}

func target(name string, port uint16, priority uint32) Target {
	return Target{Name: name, Port: port, Host: &upstream.Host{Hostname: name, Cluster: "c", Priority: priority, Weight: 1}}
}

func TestStrictHostsFollowAnswers(t *testing.T) {
	h := newHarness(t, Config{Targets: []Target{target("a.test", 80, 0), target("b.test", 8080, 1)}})

	h.apply(0, answer("10.0.0.1", "10.0.0.2", "10.0.0.1"))
	if diff := cmp.Diff([][]string{{"10.0.0.1:80", "10.0.0.2:80"}, {}}, h.last()); diff != "" {
		t.Fatalf("after a.test (-want +got):\n%s", diff)
	}
	first := h.published[0][0][0]

	h.apply(1, answer("fd00::1"))
	if diff := cmp.Diff([][]string{{"10.0.0.1:80", "10.0.0.2:80"}, {"[fd00::1]:8080"}}, h.last()); diff != "" {
		t.Fatalf("after b.test (-want +got):\n%s", diff)
	}

	// The same addresses in another order change nothing.
	h.apply(0, answer("10.0.0.2", "10.0.0.1"))
	if n := len(h.published); n != 2 || h.counter("update_no_rebuild") != 1 {
		t.Fatalf("published %d times, update_no_rebuild %d; want 2 and 1", n, h.counter("update_no_rebuild"))
	}

	// One address goes, one comes: the kept host is the same host.
	h.apply(0, answer("10.0.0.1", "10.0.0.3"))
	if diff := cmp.Diff([][]string{{"10.0.0.1:80", "10.0.0.3:80"}, {"[fd00::1]:8080"}}, h.last()); diff != "" {
		t.Fatalf("after the change (-want +got):\n%s", diff)
	}
	if got := h.published[2][0][0]; got != first {
		t.Error("the host kept across answers is a new object: its stats and connections would be lost")
	}
	if got := h.published[2][0][0]; got.Hostname != "a.test" || got.Priority != 0 || got.Cluster != "c" {
		t.Errorf("host fields %+v", got)
	}

	// A failure keeps the hosts; an empty answer removes them.
	h.apply(0, failed)
	if n := len(h.published); n != 3 {
		t.Fatalf("a failed resolution published hosts")
	}
	h.apply(0, answer())
	if diff := cmp.Diff([][]string{{}, {"[fd00::1]:8080"}}, h.last()); diff != "" {
		t.Errorf("after an empty answer (-want +got):\n%s", diff)
	}
	for name, want := range map[string]uint64{"update_success": 5, "update_failure": 1, "update_no_rebuild": 1} {
		if got := h.counter(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestLogicalOneHost(t *testing.T) {
	h := newHarness(t, Config{Logical: true, Targets: []Target{target("svc.test", 443, 0)}})
	h.apply(0, answer("10.0.0.1", "10.0.0.2"))
	if diff := cmp.Diff([][]string{{"10.0.0.1:443"}}, h.last()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	h.apply(0, answer("10.0.0.1", "10.0.0.2"))
	if len(h.published) != 1 || h.counter("update_no_rebuild") != 1 {
		t.Fatalf("the same answer rebuilt the host")
	}
	// An empty answer is a failure for LOGICAL_DNS: the host stays.
	h.apply(0, answer())
	if len(h.published) != 1 || h.counter("update_failure") != 1 {
		t.Fatalf("an empty answer changed the host or was not a failure")
	}
	old := h.published[0][0][0]
	h.apply(0, answer("10.0.0.9"))
	if diff := cmp.Diff([][]string{{"10.0.0.9:443"}}, h.last()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if h.published[1][0][0] == old {
		t.Error("a new address should be a new host (its connections drain, new ones use the new address)")
	}
	// Another list with the same first address is a change, as in Envoy.
	h.apply(0, answer("10.0.0.9", "10.0.0.8"))
	if len(h.published) != 3 {
		t.Errorf("published %d times, want 3", len(h.published))
	}
}

func TestRefreshAfter(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		res  dns.Result
		want time.Duration
	}{
		{"refresh rate", Config{RefreshRate: 3 * time.Second}, answer("10.0.0.1/30"), 3 * time.Second},
		{"strict: the smallest TTL", Config{RefreshRate: time.Second, RespectTTL: true}, answer("10.0.0.1/30", "10.0.0.2/20"), 20 * time.Second},
		{"logical: the first address's TTL", Config{Logical: true, RefreshRate: time.Second, RespectTTL: true}, answer("10.0.0.1/30", "10.0.0.2/20"), 30 * time.Second},
		{"a zero TTL keeps the refresh rate", Config{RefreshRate: time.Second, RespectTTL: true}, answer("10.0.0.1/0"), time.Second},
		{"no address keeps the refresh rate", Config{RefreshRate: time.Second, RespectTTL: true}, answer(), time.Second},
		{"the minimum refresh rate", Config{RefreshRate: time.Second, RespectTTL: true, MinRefreshRate: 10 * time.Second}, answer("10.0.0.1/2"), 10 * time.Second},
		// rand returns 7: 7 ms of a 100 ms jitter.
		{"jitter", Config{RefreshRate: time.Second, Jitter: 100 * time.Millisecond}, answer("10.0.0.1/30"), time.Second + 7*time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Targets = []Target{target("a.test", 80, 0)}
			h := newHarness(t, tc.cfg)
			if got := h.apply(0, tc.res); got != tc.want {
				t.Errorf("next refresh in %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Run("fixed at the refresh rate", func(t *testing.T) {
		b := dns.NewBackoffState(nil, 5*time.Second, nil)
		for range 3 {
			if got := b.Next(); got != 5*time.Second {
				t.Fatalf("%v, want 5s", got)
			}
		}
	})
	t.Run("jittered exponential", func(t *testing.T) {
		// rand returns a huge number: each delay is that number modulo the
		// interval in ms, which doubles from 100 ms up to 400 ms.
		const r = 1_000_003
		b := dns.NewBackoffState(&Backoff{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond}, time.Second, func() uint64 { return r })
		var got []time.Duration
		for range 5 {
			got = append(got, b.Next())
		}
		want := []time.Duration{r % 100, r % 200, r % 400, r % 400, r % 400}
		for i := range want {
			want[i] *= time.Millisecond
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		b.Reset()
		if d := b.Next(); d != (r%100)*time.Millisecond {
			t.Errorf("after a success: %v, want the base interval's", d)
		}
	})
	t.Run("never zero", func(t *testing.T) {
		b := dns.NewBackoffState(&Backoff{Base: 100 * time.Millisecond, Max: time.Second}, time.Second, func() uint64 { return 0 })
		if d := b.Next(); d != time.Millisecond {
			t.Errorf("%v, want 1ms", d)
		}
	})
	t.Run("a failure uses the back-off", func(t *testing.T) {
		h := newHarness(t, Config{Targets: []Target{target("a.test", 80, 0)}, Failure: &Backoff{Base: time.Second, Max: 8 * time.Second}})
		if d := h.apply(0, failed); d != 7*time.Millisecond {
			t.Errorf("%v, want 7ms (rand 7 below the 1s interval)", d)
		}
	})
}

func TestWarmAndLoop(t *testing.T) {
	store := stats.NewStore()
	sc := store.Scope("cluster.c.")
	st := Stats{sc.Counter("update_attempt"), sc.Counter("update_success"), sc.Counter("update_failure"), sc.Counter("update_no_rebuild")}
	r := newFakeResolver()
	var mu sync.Mutex
	var published int
	publish := func([][]*upstream.Host) { mu.Lock(); published++; mu.Unlock() }
	cfg := Config{RefreshRate: 20 * time.Millisecond, WaitForWarm: true, Targets: []Target{target("slow.test", 80, 0), target("fast.test", 80, 0)}}

	d := New("c", cfg, r, st, publish, logr.Discard(), func() uint64 { return 0 })
	select {
	case <-d.Warmed():
		t.Fatal("warmed before any resolution")
	default:
	}
	r.set("fast.test", answer("10.0.0.1"))
	d.Start()
	select {
	case <-d.Warmed():
	case <-time.After(5 * time.Second):
		t.Fatal("not warmed after the first resolution of fast.test (slow.test never answers)")
	}
	// The refresh loop resolves fast.test again and again.
	deadline := time.Now().Add(10 * time.Second)
	for r.count("fast.test") < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.count("fast.test"); n < 4 {
		t.Fatalf("fast.test resolved %d times", n)
	}
	stopped := make(chan struct{})
	go func() { d.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return while slow.test was resolving")
	}
	mu.Lock()
	defer mu.Unlock()
	if published != 1 {
		t.Errorf("published %d times, want once (the answer never changed)", published)
	}
	if st.UpdateAttempt.Value() < 5 || st.UpdateNoRebuild.Value() < 3 {
		t.Errorf("update_attempt %d, update_no_rebuild %d", st.UpdateAttempt.Value(), st.UpdateNoRebuild.Value())
	}

	for name, cfg := range map[string]Config{
		"wait_for_warm_on_init false": {RefreshRate: time.Second, Targets: []Target{target("x", 80, 0)}},
		"no endpoints":                {RefreshRate: time.Second, WaitForWarm: true},
	} {
		d := New("c", cfg, r, st, publish, logr.Discard(), nil)
		select {
		case <-d.Warmed():
		default:
			t.Errorf("%s: not warmed at once", name)
		}
		d.Stop()
	}
}

func TestFromCluster(t *testing.T) {
	ms := func(n int64) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name    string
		cluster *clusterv3.Cluster
		want    Config
		errs    []string
	}{
		{"defaults", &clusterv3.Cluster{ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}},
			Config{RefreshRate: 5 * time.Second, WaitForWarm: true, Family: dns.Auto}, nil},
		{"everything", &clusterv3.Cluster{
			ClusterDiscoveryType:  &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
			DnsRefreshRate:        ms(2000),
			DnsFailureRefreshRate: &clusterv3.Cluster_RefreshRate{BaseInterval: ms(100), MaxInterval: ms(900)},
			RespectDnsTtl:         true,
			DnsJitter:             ms(300),
			DnsLookupFamily:       clusterv3.Cluster_V4_ONLY,
			WaitForWarmOnInit:     wrapperspb.Bool(false),
		}, Config{Logical: true, RefreshRate: 2 * time.Second, Failure: &Backoff{Base: 100 * time.Millisecond, Max: 900 * time.Millisecond},
			RespectTTL: true, Jitter: 300 * time.Millisecond, Family: dns.V4Only}, nil},
		{"max_interval defaults to ten times the base", &clusterv3.Cluster{
			DnsFailureRefreshRate: &clusterv3.Cluster_RefreshRate{BaseInterval: ms(100)},
		}, Config{RefreshRate: 5 * time.Second, WaitForWarm: true, Failure: &Backoff{Base: 100 * time.Millisecond, Max: time.Second}}, nil},
		{"max_interval below the base", &clusterv3.Cluster{
			DnsFailureRefreshRate: &clusterv3.Cluster_RefreshRate{BaseInterval: ms(500), MaxInterval: ms(100)},
		}, Config{}, []string{"dns_failure_refresh_rate.max_interval: must be greater than or equal to the base_interval"}},
		{"base_interval missing", &clusterv3.Cluster{
			DnsFailureRefreshRate: &clusterv3.Cluster_RefreshRate{},
		}, Config{}, []string{"dns_failure_refresh_rate.base_interval: required"}},
		{"refresh below 1ms", &clusterv3.Cluster{DnsRefreshRate: durationpb.New(time.Microsecond)},
			Config{}, []string{"dns_refresh_rate: must be at least 1ms"}},
		{"negative jitter", &clusterv3.Cluster{DnsJitter: durationpb.New(-time.Second)},
			Config{}, []string{"dns_jitter: must be a non-negative duration"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := FromCluster(tc.cluster)
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			if diff := cmp.Diff(tc.errs, msgs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if len(tc.errs) == 0 {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("config (-want +got):\n%s", diff)
				}
			}
		})
	}
}
