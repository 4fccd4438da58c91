package loadreport

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// The runtime features that choose which localities a report lists, in
// Envoy's spelling and Outrigger's (which wins).
const (
	// activeKey: a locality with requests in progress is listed even if
	// none was issued in the interval (true by default).
	activeKey      = "envoy.reloadable_features.report_load_when_rq_active_is_non_zero"
	activeProxyKey = "proxy.reloadable_features.report_load_when_rq_active_is_non_zero"
	// nonZeroKey: a locality with any count above zero is listed (false
	// by default; it wins over activeKey).
	nonZeroKey      = "envoy.reloadable_features.report_load_for_non_zero_stats"
	nonZeroProxyKey = "proxy.reloadable_features.report_load_for_non_zero_stats"
)

// flag reads a runtime feature in both spellings.
func (r *Reporter) flag(envoyKey, proxyKey string, def bool) bool {
	if r.opts.Flag == nil {
		return def
	}
	return r.opts.Flag(proxyKey, r.opts.Flag(envoyKey, def))
}

// request builds the next report, as Envoy's sendLoadStatsRequest: the
// node, then one ClusterStats per tracked cluster that still exists, each
// measuring from its interval's start, which moves to now.
func (r *Reporter) request() *lrsv3.LoadStatsRequest {
	req := &lrsv3.LoadStatsRequest{Node: r.node}
	rule := localityRule{
		nonZero: r.flag(nonZeroKey, nonZeroProxyKey, false),
		active:  r.flag(activeKey, activeProxyKey, true),
	}
	endpoints := r.message.GetReportEndpointGranularity()
	for _, name := range r.trackedNames() {
		c := r.opts.Clusters.Cluster(name)
		if c == nil {
			continue
		}
		cs := clusterStats(c, rule, endpoints)
		now := r.opts.Now()
		cs.LoadReportInterval = durationpb.New(now.Sub(r.tracked[name]).Truncate(time.Microsecond))
		r.tracked[name] = now
		req.ClusterStats = append(req.ClusterStats, cs)
	}
	return req
}

// localityRule says which localities a report lists (see the runtime
// features above).
type localityRule struct {
	nonZero, active bool
}

// listed reports whether a locality with these counts is in the report:
// by default one that issued requests, or has some in progress.
func (l localityRule) listed(t upstream.Latched, active uint64) bool {
	switch {
	case l.nonZero:
		return t.Success != 0 || t.Error != 0 || t.Issued != 0 || active != 0
	case l.active:
		return t.Issued != 0 || active != 0
	}
	return t.Issued != 0
}

// clusterStats is one cluster's entry: its localities with load, and its
// drops, every count latched.
func clusterStats(c *cluster.Cluster, rule localityRule, endpoints bool) *endpointv3.ClusterStats {
	cs := &endpointv3.ClusterStats{ClusterName: c.Name(), ClusterServiceName: c.LoadReportServiceName()}
	for _, group := range c.HostsPerLocality() {
		if ls := localityStats(group, rule, endpoints); ls != nil {
			cs.UpstreamLocalityStats = append(cs.UpstreamLocalityStats, ls)
		}
	}
	dropped, overload := c.LatchDrops()
	cs.TotalDroppedRequests = dropped
	if overload > 0 {
		cs.DroppedRequests = []*endpointv3.ClusterStats_DroppedRequests{{Category: c.DropCategory(), DroppedCount: overload}}
	}
	return cs
}

// localityStats latches the counts of one locality's hosts and returns
// its entry, nil when the rule leaves it out (its counts latched all the
// same). With endpoints, each host with load has its own entry.
func localityStats(group cluster.LocalityHosts, rule localityRule, endpoints bool) *endpointv3.UpstreamLocalityStats {
	ls := &endpointv3.UpstreamLocalityStats{
		Locality: &corev3.Locality{Region: group.Locality.Region, Zone: group.Locality.Zone, SubZone: group.Locality.SubZone},
		Priority: group.Priority,
	}
	var sum upstream.Latched
	var active uint64
	for _, h := range group.Hosts {
		t := h.Stats.Latch()
		a := uint64(max(h.Stats.RqActive.Load(), 0))
		if t.Success+t.Error+t.Issued+a == 0 {
			continue
		}
		sum.Success += t.Success
		sum.Error += t.Error
		sum.Issued += t.Issued
		active += a
		if endpoints {
			ls.UpstreamEndpointStats = append(ls.UpstreamEndpointStats, &endpointv3.UpstreamEndpointStats{
				Address:                 upstream.AddressProto(h.Address),
				TotalSuccessfulRequests: t.Success,
				TotalErrorRequests:      t.Error,
				TotalRequestsInProgress: a,
				TotalIssuedRequests:     t.Issued,
			})
		}
	}
	if !rule.listed(sum, active) {
		return nil
	}
	ls.TotalSuccessfulRequests = sum.Success
	ls.TotalErrorRequests = sum.Error
	ls.TotalRequestsInProgress = active
	ls.TotalIssuedRequests = sum.Issued
	return ls
}
