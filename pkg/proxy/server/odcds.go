package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// onDemandPoll is how often a connection waiting for an on-demand cluster
// looks for it.
const onDemandPoll = 20 * time.Millisecond

// onDemandClusters is on-demand CDS (Envoy's OdCdsApiImpl) over the
// incremental ADS stream: the first connection that needs a cluster
// subscribes to its name, the clusters that arrive are applied as
// discovered clusters (each response's update is the whole set asked for
// so far), and connections wait for their cluster to be in service.
// When cds_config brings every cluster over the same stream (a
// wildcard), nothing more is asked for: the connection waits for the
// cluster to arrive with the others.
type onDemandClusters struct {
	s *Server

	mu    sync.Mutex
	sub   *xds.ADSSubscription
	names []string
}

var _ netfilter.OnDemandClusters = (*onDemandClusters)(nil)

// onDemand is the server's on-demand cluster discovery, nil without an
// incremental ADS stream (on-demand CDS is delta only, as in Envoy).
func (s *Server) onDemand() netfilter.OnDemandClusters {
	if s.ads == nil || !s.ads.Delta() || s.clusters == nil {
		return nil
	}
	s.odcdsOnce.Do(func() { s.odcds = &onDemandClusters{s: s} })
	return s.odcds
}

// Discover implements netfilter.OnDemandClusters.
func (o *onDemandClusters) Discover(ctx context.Context, name string, timeout time.Duration) bool {
	if o.s.clusters.Cluster(name) != nil {
		return true
	}
	o.request(name)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(onDemandPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return o.s.clusters.Cluster(name) != nil
		case <-tick.C:
			if o.s.clusters.Cluster(name) != nil {
				return true
			}
		}
	}
}

// request adds name to the on-demand subscription, which it opens on
// first use.
func (o *onDemandClusters) request(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.s.cds != nil || slices.Contains(o.names, name) {
		return
	}
	o.names = append(o.names, name)
	if o.sub != nil {
		o.sub.SetResourceNames(o.names)
		return
	}
	sub, err := o.s.ads.Subscribe(xds.SubscriptionOptions{
		TypeURL:       clusterTypeURL,
		Stats:         o.s.stats.Scope("cluster_manager.odcds."),
		ResourceNames: o.names,
		WholeSet:      true,
	}, o.apply)
	if err != nil {
		logging.Warning(o.s.logs.Logger("upstream"), "odcds: cannot subscribe", "cluster", name, "error", err.Error())
		o.names = nil
		return
	}
	o.sub = sub
}

// apply applies the on-demand clusters as discovered clusters. A cluster
// of type EDS is refused when the server has no endpoint discovery (no
// EDS cluster in the bootstrap and no cds_config): its endpoints would
// never be asked for.
func (o *onDemandClusters) apply(u xds.Update) error {
	if o.s.eds == nil {
		for i, r := range u.Resources {
			if c, ok := r.(*clusterv3.Cluster); ok && c.GetType() == clusterv3.Cluster_EDS {
				return fmt.Errorf("resources[%d].type: an on-demand EDS cluster needs endpoint discovery (an EDS cluster in static_resources or cds_config over ADS)", i)
			}
		}
	}
	return o.s.applyClusterUpdate(u)
}
