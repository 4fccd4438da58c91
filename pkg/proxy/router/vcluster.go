package router

import (
	"errors"
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// OtherVirtualCluster is the name of a virtual host's catch-all virtual
// cluster: the requests none of its virtual_clusters matched, as Envoy
// names it in stats.
const OtherVirtualCluster = "other"

// VirtualCluster is one of a virtual host's virtual_clusters, or its
// catch-all: a set of requests the router keeps stats for
// (vhost.<virtual host>.vcluster.<name>.*).
type VirtualCluster struct {
	Name string
	// VirtualHost is the virtual host it belongs to.
	VirtualHost *VirtualHost
	// Index is the virtual cluster's position in Table.VirtualClusters,
	// so that the connection manager can keep its stats in a slice.
	Index int
	// headers must all match; the catch-all has none.
	headers HeaderMatch
}

// compileVirtualClusters compiles a virtual host's virtual_clusters into
// vh, with the catch-all "other" when there is at least one, numbering
// them from next (see VirtualCluster.Index). Errors name the field below
// the virtual host.
func compileVirtualClusters(vh *VirtualHost, vcs []*routev3.VirtualCluster, next int) error {
	if len(vcs) == 0 {
		return nil
	}
	for i, vc := range vcs {
		if len(vc.GetHeaders()) == 0 {
			// As Envoy: a virtual cluster without headers would match
			// every request and hide the others.
			return fmt.Errorf("virtual_clusters[%d].headers: virtual clusters must define 'headers'", i)
		}
		if vc.GetName() == "" {
			return fmt.Errorf("virtual_clusters[%d].name: %w", i, errors.New("a name is required"))
		}
		hm, err := CompileHeaderMatch(vc.GetHeaders())
		if err != nil {
			return fmt.Errorf("virtual_clusters[%d].%w", i, err)
		}
		vh.VirtualClusters = append(vh.VirtualClusters, &VirtualCluster{Name: vc.GetName(), VirtualHost: vh, Index: next, headers: hm})
		next++
	}
	vh.otherCluster = &VirtualCluster{Name: OtherVirtualCluster, VirtualHost: vh, Index: next}
	return nil
}

// VirtualCluster is the virtual cluster of a request to this virtual
// host: the first whose headers all match, else the catch-all "other";
// nil when the virtual host has no virtual_clusters.
func (vh *VirtualHost) VirtualCluster(req *Request) *VirtualCluster {
	for _, vc := range vh.VirtualClusters {
		if vc.headers.Matches(req) {
			return vc
		}
	}
	return vh.otherCluster
}
