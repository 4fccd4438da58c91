package cluster

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// PolicyHasher is a pick's upstream.Hasher that can also compute the
// hash key with another hash policy than its own: the HTTP router's
// stream (with the request) and tcp_proxy's session (with the
// connection's addresses only).
type PolicyHasher interface {
	upstream.Hasher
	// PickHashWith computes the hash key with p; false when p yields
	// none.
	PickHashWith(p *router.HashPolicy) (uint64, bool)
}

// withLbHashPolicy returns the pick context the cluster's balancer reads
// when its policy has its own hash_policy (a typed ring hash or maglev
// policy's consistent_hashing_lb_config.hash_policy): Envoy's balancer
// then hashes the request with it and ignores the route's (or
// tcp_proxy's) hash key. The key is computed on first use, as the
// route's is; pc itself is left as it is, since an aggregate cluster
// hands it to clusters with other policies. A pick that cannot be
// hashed by another policy (none from the router or tcp_proxy) has no
// hash, and the balancer picks at random, as Envoy's does without
// request headers.
// pc is not nil, nor the cluster's hash policy.
func (c *Cluster) withLbHashPolicy(pc *upstream.PickContext) *upstream.PickContext {
	hp := c.settings.hashPolicy
	into := new(upstream.PickContext)
	*into = *pc
	into.Hash, into.HasHash = 0, false
	into.Hasher = nil
	if ph, ok := pc.Hasher.(PolicyHasher); ok {
		into.Hasher = lbHasher{from: ph, policy: hp}
	} else if src, ok := pc.Hasher.(policySource); ok {
		into.Hasher = lbHasher{from: src.PolicyHasher(), policy: hp}
	}
	return into
}

// policySource is an upstream.Hasher that is already a cluster's
// lbHasher (an aggregate cluster's pick handed on): the hash is
// recomputed with the next cluster's policy from the same request.
type policySource interface {
	PolicyHasher() PolicyHasher
}

// lbHasher computes a pick's hash key with a cluster's own hash policy.
type lbHasher struct {
	from   PolicyHasher
	policy *router.HashPolicy
}

func (h lbHasher) PickHash() (uint64, bool)   { return h.from.PickHashWith(h.policy) }
func (h lbHasher) PolicyHasher() PolicyHasher { return h.from }
