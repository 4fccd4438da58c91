package cluster

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// loadReportDrops count a cluster's dropped requests for the load
// reports (Envoy's ClusterLoadReportStats), which /stats does not show:
// dropped is upstream_rq_dropped, overload upstream_rq_drop_overload.
// Only drop_overloads drops a request before a host is chosen here (Envoy
// also counts its maintenance mode, which Outrigger has not), so both
// count the same requests.
type loadReportDrops struct {
	dropped, overload atomic.Uint64
}

// LatchDrops returns the requests dropped since the previous call (all
// of them, overload drops among them) and starts counting again. One
// caller latches (the load reporter).
func (c *Cluster) LatchDrops() (dropped, overload uint64) {
	return c.loadDrops.dropped.Swap(0), c.loadDrops.overload.Swap(0)
}

// DropCategory is the category of the load assignment's drop_overloads
// entry, "" without one.
func (c *Cluster) DropCategory() string {
	if p := c.dropCategory.Load(); p != nil {
		return *p
	}
	return ""
}

// LoadReportServiceName is the cluster_service_name of the cluster's load
// reports: an EDS cluster's eds_cluster_config.service_name, "" when it
// has none (not the cluster's name it then asks for) or is of another
// type.
func (c *Cluster) LoadReportServiceName() string {
	if c.settings.eds == nil {
		return ""
	}
	return c.settings.eds.configuredName
}

// LocalityHosts are the hosts of one locality at one priority.
type LocalityHosts struct {
	Priority uint32
	Locality upstream.Locality
	Hosts    []*upstream.Host
}

// HostsPerLocality groups the cluster's hosts as Envoy's host sets do
// for load reports: by priority, then by locality, the proxy's own
// locality first when it has hosts, then the others in order of region,
// zone and sub-zone. ORIGINAL_DST, dynamic forward proxy and aggregate
// clusters have no such grouping in Envoy (their hosts are not per
// locality), so none here either: their load is not reported per
// locality.
func (c *Cluster) HostsPerLocality() []LocalityHosts {
	if c.origDst != nil || c.dfp != nil || c.subs != nil || c.agg != nil {
		return nil
	}
	var out []LocalityHosts
	for p, level := range c.set.Load().priorities {
		start := len(out)
		for _, h := range level {
			i := slices.IndexFunc(out[start:], func(g LocalityHosts) bool { return g.Locality == h.Locality })
			if i < 0 {
				out = append(out, LocalityHosts{Priority: uint32(p), Locality: h.Locality})
				i = len(out) - start - 1
			}
			out[start+i].Hosts = append(out[start+i].Hosts, h)
		}
		slices.SortStableFunc(out[start:], func(a, b LocalityHosts) int {
			if c.local != nil && (a.Locality == *c.local) != (b.Locality == *c.local) {
				if a.Locality == *c.local {
					return -1
				}
				return 1
			}
			return cmp.Or(cmp.Compare(a.Locality.Region, b.Locality.Region),
				cmp.Compare(a.Locality.Zone, b.Locality.Zone),
				cmp.Compare(a.Locality.SubZone, b.Locality.SubZone))
		})
	}
	return out
}
