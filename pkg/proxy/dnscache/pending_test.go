package dnscache

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestPendingLimitFollowsTheRuntimeKey(t *testing.T) {
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	m := NewManager(Options{Stats: store, Resolver: func() dns.Resolver { return &fakeResolver{} }, Runtime: rt.Snapshot})
	t.Cleanup(m.Close)
	c, err := m.ForConfig(&dfpcommonv3.DnsCacheConfig{
		Name:                   "p",
		DnsCacheCircuitBreaker: &dfpcommonv3.DnsCacheCircuitBreakers{MaxPendingRequests: wrapperspb.UInt32(1)},
	})
	if err != nil {
		t.Fatal(err)
	}

	// max_pending_requests: 1.
	release, ok := c.AcquirePending()
	if !ok {
		t.Fatal("the first pending request was refused")
	}
	if _, ok := c.AcquirePending(); ok {
		t.Fatal("a second pending request was let in past max_pending_requests 1")
	}

	// The runtime raises the limit: one more fits, the gauges follow.
	if err := rt.Modify(map[string]string{"dns_cache.p.circuit_breakers": "2"}); err != nil {
		t.Fatal(err)
	}
	release2, ok := c.AcquirePending()
	if !ok {
		t.Fatal("the runtime's limit of 2 was not applied")
	}
	if v := store.Gauge("dns_cache.p.circuit_breakers.rq_pending_open").Value(); v != 1 {
		t.Errorf("rq_pending_open %d at 2 of 2", v)
	}
	if _, ok := c.AcquirePending(); ok {
		t.Fatal("a third pending request was let in past the runtime's 2")
	}
	release2()
	if v := store.Gauge("dns_cache.p.circuit_breakers.rq_pending_remaining").Value(); v != 1 {
		t.Errorf("rq_pending_remaining %d at 1 of 2", v)
	}

	// Removing the key brings the configured limit back.
	if err := rt.Modify(map[string]string{"dns_cache.p.circuit_breakers": ""}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.AcquirePending(); ok {
		t.Fatal("the configured limit of 1 did not come back")
	}
	release()
	if v := store.Counter("dns_cache.p.dns_rq_pending_overflow").Value(); v != 3 {
		t.Errorf("dns_rq_pending_overflow %d, want 3", v)
	}
}
