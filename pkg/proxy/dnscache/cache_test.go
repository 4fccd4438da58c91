package dnscache

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	keyvaluev3 "github.com/envoyproxy/go-control-plane/envoy/config/common/key_value/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeResolver answers from a table; a name missing from it is NXDOMAIN.
// hold, when set, blocks every resolution until it is closed.
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string]string
	hold  chan struct{}
	calls int
}

func (f *fakeResolver) Resolve(ctx context.Context, name string, _ dns.Family) dns.Result {
	f.mu.Lock()
	f.calls++
	ip, ok := f.addrs[name]
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return dns.Result{Status: dns.Failed, Details: "cancelled"}
		}
	}
	if !ok {
		return dns.Result{Status: dns.Completed, Details: "not found"}
	}
	var out []dns.Address
	for a := range strings.SplitSeq(ip, ",") {
		out = append(out, dns.Address{IP: netip.MustParseAddr(a)})
	}
	return dns.Result{Status: dns.Completed, Addresses: out}
}

// recorder is a Subscriber that records what it is told.
type recorder struct {
	mu      sync.Mutex
	changed map[string]netip.AddrPort
	removed []string
}

func (r *recorder) HostChanged(h *Host, addr netip.AddrPort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changed[h.Key] = addr
}

func (r *recorder) HostRemoved(h *Host) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, h.Key)
}

func newTestCache(t *testing.T, cfg *dfpcommonv3.DnsCacheConfig, r *fakeResolver) (*Cache, *stats.Store) {
	t.Helper()
	store := stats.NewStore()
	m := NewManager(Options{Stats: store, Resolver: func() dns.Resolver { return r }})
	t.Cleanup(m.Close)
	c, err := m.ForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	return c, store
}

func wait(t *testing.T, h *Host) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the host was not resolved")
	}
}

func TestLoadResolvesOnceAndShares(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"a.test": "10.0.0.1"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{Name: "c"}, r)
	rec := &recorder{changed: map[string]netip.AddrPort{}}
	c.Subscribe(rec)

	h, st := c.Load("a.test", 80)
	if st != Loading {
		t.Fatalf("first load: %v, want Loading", st)
	}
	wait(t, h)
	if addr, ok := h.Address(); !ok || addr.String() != "10.0.0.1:80" {
		t.Fatalf("address %v %v", addr, ok)
	}
	h2, st := c.Load("a.test:80", 443)
	if st != InCache || h2 != h {
		t.Fatalf("second load: %v, same host %v", st, h2 == h)
	}
	if got := rec.changed["a.test:80"]; got.String() != "10.0.0.1:80" {
		t.Errorf("subscriber told %v", got)
	}
	if v := store.Counter("dns_cache.c.host_added").Value(); v != 1 {
		t.Errorf("host_added %d", v)
	}
	if v := store.Gauge("dns_cache.c.num_hosts").Value(); v != 1 {
		t.Errorf("num_hosts %d", v)
	}

	// A name without an address is resolved again at its next load.
	n, _ := c.Load("none.test", 80)
	wait(t, n)
	if _, ok := n.Address(); ok || n.Details() != "dns_resolution_failure{not_found}" {
		t.Errorf("unresolved host: details %q", n.Details())
	}
	again, st := c.Load("none.test", 80)
	if st != Loading || again == n {
		t.Errorf("reload of an unresolved host: %v, new host %v", st, again != n)
	}
}

func TestMaxHostsAndPending(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"a.test": "10.0.0.1", "b.test": "10.0.0.2"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{
		Name:                   "c",
		MaxHosts:               wrapperspb.UInt32(1),
		DnsCacheCircuitBreaker: &dfpcommonv3.DnsCacheCircuitBreakers{MaxPendingRequests: wrapperspb.UInt32(1)},
	}, r)
	h, _ := c.Load("a.test", 80)
	wait(t, h)
	if _, st := c.Load("b.test", 80); st != Overflow {
		t.Errorf("second host: %v, want Overflow", st)
	}
	if v := store.Counter("dns_cache.c.host_overflow").Value(); v != 1 {
		t.Errorf("host_overflow %d", v)
	}
	release, ok := c.AcquirePending()
	if !ok {
		t.Fatal("first pending refused")
	}
	if _, ok := c.AcquirePending(); ok {
		t.Error("second pending accepted over max_pending_requests 1")
	}
	if v := store.Gauge("dns_cache.c.circuit_breakers.rq_pending_open").Value(); v != 1 {
		t.Errorf("rq_pending_open %d", v)
	}
	release()
	release() // a second release changes nothing
	if _, ok := c.AcquirePending(); !ok {
		t.Error("pending refused after the release")
	}
	if v := store.Counter("dns_cache.c.dns_rq_pending_overflow").Value(); v != 1 {
		t.Errorf("dns_rq_pending_overflow %d", v)
	}
}

func TestUnusedHostsAreRemovedAfterHostTTL(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"a.test": "10.0.0.1"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{
		Name:              "c",
		HostTtl:           durationpb.New(time.Millisecond),
		DnsMinRefreshRate: durationpb.New(time.Second),
	}, r)
	rec := &recorder{changed: map[string]netip.AddrPort{}}
	c.Subscribe(rec)
	h, _ := c.Load("a.test", 80)
	wait(t, h)
	deadline := time.Now().Add(10 * time.Second)
	for c.Lookup("a.test:80") != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if c.Lookup("a.test:80") != nil {
		t.Fatal("the unused host was not removed")
	}
	if v := store.Counter("dns_cache.c.host_removed").Value(); v != 1 {
		t.Errorf("host_removed %d", v)
	}
	for time.Now().Before(deadline) {
		rec.mu.Lock()
		n := len(rec.removed)
		rec.mu.Unlock()
		if n == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the subscriber was not told of the removal")
}

func TestQueryTimeout(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{}, hold: make(chan struct{})}
	defer close(r.hold)
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{Name: "c", DnsQueryTimeout: durationpb.New(20 * time.Millisecond)}, r)
	h, _ := c.Load("slow.test", 80)
	wait(t, h)
	if !strings.Contains(h.Details(), "resolve_timeout") {
		t.Errorf("details %q", h.Details())
	}
	if v := store.Counter("dns_cache.c.dns_query_timeout").Value(); v != 1 {
		t.Errorf("dns_query_timeout %d", v)
	}
	if v := store.Counter("dns_cache.c.dns_query_failure").Value(); v != 1 {
		t.Errorf("dns_query_failure %d", v)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		cfg  *dfpcommonv3.DnsCacheConfig
		want string
	}{
		"no name":           {&dfpcommonv3.DnsCacheConfig{}, "name: required"},
		"zero max_hosts":    {&dfpcommonv3.DnsCacheConfig{Name: "c", MaxHosts: wrapperspb.UInt32(0)}, "max_hosts.value: must be greater than 0"},
		"tiny min refresh":  {&dfpcommonv3.DnsCacheConfig{Name: "c", DnsMinRefreshRate: durationpb.New(time.Millisecond)}, "dns_min_refresh_rate: must be at least 1s"},
		"backoff base":      {&dfpcommonv3.DnsCacheConfig{Name: "c", DnsFailureRefreshRate: &clusterv3.Cluster_RefreshRate{}}, "dns_failure_refresh_rate.base_interval: required"},
		"key value store":   {&dfpcommonv3.DnsCacheConfig{Name: "c", KeyValueConfig: &keyvaluev3.KeyValueStoreConfig{}}, "key_value_config.config: required"},
		"preresolve > max":  {&dfpcommonv3.DnsCacheConfig{Name: "c", MaxHosts: wrapperspb.UInt32(1), PreresolveHostnames: preresolve(2)}, "preresolve_hostnames: DNS Cache [c] configured with preresolve_hostnames=2 larger than max_hosts=1"},
		"preresolve port 0": {&dfpcommonv3.DnsCacheConfig{Name: "c", PreresolveHostnames: []*corev3.SocketAddress{{Address: "a.test"}}}, "preresolve_hostnames[0].port_value: must be a port"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := Compile(tc.cfg, nil)
			var all []string
			for _, err := range errs {
				all = append(all, err.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("errors %q, want %q", all, tc.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"a.test":      "a.test:80",
		"a.test:8080": "a.test:8080",
		"10.0.0.1":    "10.0.0.1:80",
		"[::1]":       "[::1]:80",
		"[::1]:9":     "[::1]:9",
		"::1":         "[::1]:80",
		"":            "",
	} {
		if got := Key(in, 80); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSameNameDifferentSettings(t *testing.T) {
	m := NewManager(Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return &fakeResolver{} }})
	if _, err := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "c"}); err != nil {
		t.Errorf("same settings: %v", err)
	}
	_, err := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "c", MaxHosts: wrapperspb.UInt32(3)})
	if err == nil || !strings.Contains(err.Error(), "name: config specified DNS cache 'c' with different settings") {
		t.Errorf("different settings: %v", err)
	}
}

func preresolve(n int) []*corev3.SocketAddress {
	var out []*corev3.SocketAddress
	for i := range n {
		out = append(out, &corev3.SocketAddress{Address: fmt.Sprintf("h%d.test", i), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}})
	}
	return out
}

func TestPreresolve(t *testing.T) {
	r := &fakeResolver{addrs: map[string]string{"a.test": "10.0.0.1"}}
	c, store := newTestCache(t, &dfpcommonv3.DnsCacheConfig{Name: "c", PreresolveHostnames: []*corev3.SocketAddress{
		{Address: "a.test", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8443}},
	}}, r)
	h := c.Lookup("a.test:8443")
	if h == nil {
		t.Fatal("not preresolved")
	}
	wait(t, h)
	if addr, ok := h.Address(); !ok || addr.String() != "10.0.0.1:8443" {
		t.Errorf("address %v %v", addr, ok)
	}
	if got, st := c.Load("a.test:8443", 80); st != InCache || got != h {
		t.Errorf("load after preresolve: %v", st)
	}
	if v := store.Counter("dns_cache.c.dns_query_attempt").Value(); v != 1 {
		t.Errorf("dns_query_attempt %d", v)
	}
}
