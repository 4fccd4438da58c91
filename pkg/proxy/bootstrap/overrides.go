package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// applyServiceOverrides applies --service-cluster, --service-node and
// --service-zone, which win over the configuration's node fields. An empty
// option leaves its field alone.
func applyServiceOverrides(b *bootstrapv3.Bootstrap, o LoadOptions) {
	if o.ServiceCluster == "" && o.ServiceNode == "" && o.ServiceZone == "" {
		return
	}
	if b.Node == nil {
		b.Node = &corev3.Node{}
	}
	if o.ServiceCluster != "" {
		b.Node.Cluster = o.ServiceCluster
	}
	if o.ServiceNode != "" {
		b.Node.Id = o.ServiceNode
	}
	if o.ServiceZone != "" {
		if b.Node.Locality == nil {
			b.Node.Locality = &corev3.Locality{}
		}
		b.Node.Locality.Zone = o.ServiceZone
	}
}
