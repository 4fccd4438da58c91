package router

import (
	"fmt"

	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// ClusterPolicies are the route policies a cluster's HTTP protocol options
// carry (envoy.extensions.upstreams.http.v3.HttpProtocolOptions
// retry_policy, hash_policy and request_mirror_policies). Each one that is
// set replaces the route's for the requests routed to the cluster, whole:
// Envoy's documentation says the cluster's policies override the route's
// and are not merged with them.
type ClusterPolicies struct {
	// Retry replaces the route's (and virtual host's) retry_policy; nil
	// when the cluster has none.
	Retry *RetryPolicy
	// Hash replaces the route's hash_policy; nil when the cluster has
	// none.
	Hash *HashPolicy
	// Mirrors replace the route's request_mirror_policies; empty when the
	// cluster has none.
	Mirrors []*MirrorPolicy
}

// CompileClusterPolicies compiles the route policies of a cluster's HTTP
// protocol options; nil when it sets none. Errors name the field below
// opts ("retry_policy.retry_on: ...").
func CompileClusterPolicies(opts *httpv3.HttpProtocolOptions) (*ClusterPolicies, error) {
	if opts.GetRetryPolicy() == nil && len(opts.GetHashPolicy()) == 0 && len(opts.GetRequestMirrorPolicies()) == 0 {
		return nil, nil
	}
	p := new(ClusterPolicies)
	var err error
	if p.Retry, err = compileRetryPolicy(opts.GetRetryPolicy()); err != nil {
		return nil, fmt.Errorf("retry_policy.%w", err)
	}
	if hp := opts.GetHashPolicy(); len(hp) > 0 {
		if p.Hash, err = CompileHashPolicy(hp); err != nil {
			return nil, fmt.Errorf("hash_policy%w", err)
		}
	}
	if p.Mirrors, err = compileMirrorPolicies(opts.GetRequestMirrorPolicies()); err != nil {
		return nil, fmt.Errorf("request_mirror_policies%w", err)
	}
	return p, nil
}
