package lb

import (
	clusterprovidedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/cluster_provided/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// ClusterProvidedName is the typed form of lb_policy CLUSTER_PROVIDED.
const ClusterProvidedName = "proxy.load_balancing_policies.cluster_provided"

// ClusterProvidedFactory compiles the typed cluster_provided policy: the
// cluster's type brings its own balancer (ORIGINAL_DST, aggregate,
// dynamic forward proxy), as with lb_policy CLUSTER_PROVIDED. A cluster
// type without one refuses it (see IsClusterProvided).
type ClusterProvidedFactory struct{}

// Compile checks a ClusterProvided (it has no fields).
func (ClusterProvidedFactory) Compile(cfg proto.Message) (Policy, []error) {
	if _, ok := cfg.(*clusterprovidedv3.ClusterProvided); !ok {
		return nil, wrongType(&clusterprovidedv3.ClusterProvided{}, cfg)
	}
	return clusterProvidedPolicy{}, nil
}

// clusterProvidedPolicy stands for the cluster type's own balancer; it
// has no pickers of its own.
type clusterProvidedPolicy struct{}

func (clusterProvidedPolicy) Name() string    { return "CLUSTER_PROVIDED" }
func (clusterProvidedPolicy) HashBased() bool { return false }

// Pickers is never used: the cluster type balances. A cluster that got
// here anyway picks no host.
func (clusterProvidedPolicy) Pickers(Env) PickerFactory {
	return func([]*upstream.Host, uint64) Picker { return nil }
}

// IsClusterProvided reports whether p is the typed cluster_provided
// policy.
func IsClusterProvided(p Policy) bool {
	_, ok := p.(clusterProvidedPolicy)
	return ok
}
