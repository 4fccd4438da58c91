package cluster

import (
	"testing"

	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// policyHasherFunc is a PolicyHasher: its own hash (the route's) is
// own, and with another policy it records the policy and returns with.
type policyHasherFunc struct {
	own, with uint64
	seen      *[]*router.HashPolicy
}

func (f policyHasherFunc) PickHash() (uint64, bool) { return f.own, true }
func (f policyHasherFunc) PickHashWith(p *router.HashPolicy) (uint64, bool) {
	*f.seen = append(*f.seen, p)
	return f.with, true
}

// TestLbHashPolicyReplacesTheRoutes checks that a typed ring hash or
// maglev policy with its own hash_policy hashes each pick with it, as
// Envoy's balancer does, not with the route's; that a pick without a
// request-aware hasher has no hash then (random); and that a cluster
// without one keeps the route's hash.
func TestLbHashPolicyReplacesTheRoutes(t *testing.T) {
	const typed = `
  load_balancing_policy: {policies: [{typed_extension_config: {name: p, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.`
	src := "- name: ring" + typed + `ring_hash.v3.RingHash, consistent_hashing_lb_config: {hash_policy: [{header: {header_name: x-user}}]}}}}]}` + upHosts(1, 2, 3, 4) +
		"\n- name: maglev" + typed + `maglev.v3.Maglev, consistent_hashing_lb_config: {hash_policy: [{header: {header_name: x-user}}]}}}}]}` + upHosts(1, 2, 3, 4) +
		"\n- name: plain" + typed + `ring_hash.v3.RingHash}}}]}` + upHosts(1, 2, 3, 4)
	m, _, _ := newTestManager(t, src, withLbPolicies(t))
	for _, name := range []string{"ring", "maglev"} {
		c := m.Cluster(name)
		var seen []*router.HashPolicy
		hosts := map[*upstream.Host]bool{}
		for k := range uint64(32) {
			with := k * 0x9e3779b97f4a7c15
			// The route's hash differs for every pick of a key: the
			// cluster's policy alone must decide.
			var want *upstream.Host
			for r := range uint64(4) {
				pc := &upstream.PickContext{Hasher: policyHasherFunc{own: r*7 + 1, with: with, seen: &seen}}
				got := c.PickHost(pc)
				if want == nil {
					want = got
				}
				if got != want {
					t.Fatalf("%s: key %d, route hash %d: picked %s, want %s", name, k, r, got.Address, want.Address)
				}
				// The caller's context is left as it was.
				if pc.Hasher == nil || pc.HasHash {
					t.Fatalf("%s: the pick context was changed", name)
				}
			}
			hosts[want] = true
		}
		if len(hosts) < 2 {
			t.Errorf("%s: 32 keys went to %d host", name, len(hosts))
		}
		if len(seen) != 32*4 || seen[0] != c.settings.hashPolicy || seen[0] == nil {
			t.Errorf("%s: %d picks hashed with the cluster's policy, want %d", name, len(seen), 32*4)
		}
		// A pick whose hasher cannot run another policy has no hash:
		// the route's is not computed.
		calls := 0
		c.PickHost(&upstream.PickContext{Hasher: hasherFunc(func() (uint64, bool) { calls++; return 7, true })})
		if calls != 0 {
			t.Errorf("%s: the pick's own hash was computed", name)
		}
	}
	// Without its own policy the route's hash decides.
	c := m.Cluster("plain")
	var seen []*router.HashPolicy
	want := c.PickHost(&upstream.PickContext{Hash: 5, HasHash: true})
	for range 10 {
		if got := c.PickHost(&upstream.PickContext{Hasher: policyHasherFunc{own: 5, with: 99, seen: &seen}}); got != want {
			t.Fatalf("plain: picked %s, want %s", got.Address, want.Address)
		}
	}
	if diff := cmp.Diff(0, len(seen)); diff != "" {
		t.Errorf("plain hashed with another policy (-want +got):\n%s", diff)
	}
}

// withLbPolicies registers the typed load-balancing policies, as the
// server does.
func withLbPolicies(t *testing.T) func(*Options) {
	t.Helper()
	reg, err := extension.New(
		extension.Of(lb.LeastRequestName, lb.Category, &leastrequestv3.LeastRequest{}, lb.LeastRequestFactory{}),
		extension.Of(lb.MaglevName, lb.Category, &maglevv3.Maglev{}, lb.MaglevFactory{}),
		extension.Of(lb.RandomName, lb.Category, &randomv3.Random{}, lb.RandomFactory{}),
		extension.Of(lb.RingHashName, lb.Category, &ringhashv3.RingHash{}, lb.RingHashFactory{}),
		extension.Of(lb.RoundRobinName, lb.Category, &roundrobinv3.RoundRobin{}, lb.RoundRobinFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Extensions = reg }
}
