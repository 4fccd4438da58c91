package server

import (
	"net/netip"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// A *cluster.Cluster is what the connection manager's router needs of a
// cluster, method for method.
var _ httpconn.UpstreamCluster = (*cluster.Cluster)(nil)

// upstreams is how connection managers reach the clusters (the
// httpconn.Deps.Upstreams of every listener).
func (s *Server) upstreams() httpconn.Upstreams {
	return upstreamsView{m: s.clusters}
}

// upstreamsView adapts the cluster manager to httpconn.Upstreams.
type upstreamsView struct{ m *cluster.Manager }

// Cluster returns the named cluster, or a nil interface when there is none
// (never a nil *cluster.Cluster inside a non-nil interface).
func (v upstreamsView) Cluster(name string) httpconn.UpstreamCluster {
	if v.m == nil {
		return nil
	}
	if c := v.m.Cluster(name); c != nil {
		if c.Delegates() {
			return aggregateUpstream{c}
		}
		return c
	}
	return nil
}

// An aggregate cluster's attempt, once its host is chosen, is what the
// router needs of a cluster too.
var _ httpconn.UpstreamCluster = (*cluster.AggregateAttempt)(nil)

// aggregateUpstream is an aggregate cluster as the router reaches it: each
// attempt goes through the cluster of the host it picked.
type aggregateUpstream struct{ *cluster.Cluster }

// ForHost is the attempt's cluster: the host's, seen through the
// aggregate (the aggregate itself when no cluster has h any more, whose
// pools then refuse it).
func (a aggregateUpstream) ForHost(h *upstream.Host) httpconn.UpstreamCluster {
	if v := a.Cluster.ForHost(h); v != nil {
		return v
	}
	return a
}

// A *cluster.Cluster is what network filters (tcp_proxy) need of a
// cluster.
var _ netfilter.Cluster = (*cluster.Cluster)(nil)

// networkClusters adapts the cluster manager to netfilter.Clusters.
type networkClusters struct{ m *cluster.Manager }

// Cluster returns the named cluster, or a nil interface when there is none.
func (v networkClusters) Cluster(name string) netfilter.Cluster {
	if v.m == nil {
		return nil
	}
	if c := v.m.Cluster(name); c != nil {
		return c
	}
	return nil
}

// DNSCaches are the dynamic forward proxy's DNS caches, which the SNI
// dynamic forward proxy filter shares with the clusters.
func (v networkClusters) DNSCaches() *dnscache.Manager { return v.m.DNSCaches() }

// Clusters implements admin.ClusterSource: every cluster, in configuration
// order, with its circuit-breaker settings and its hosts' stats and
// health, as Envoy's /clusters builds it.
func (s *Server) Clusters() *adminv3.Clusters {
	out := &adminv3.Clusters{}
	if s.clusters == nil {
		return out
	}
	for _, c := range s.clusters.Clusters() {
		out.ClusterStatuses = append(out.ClusterStatuses, clusterStatus(c))
	}
	return out
}

// IsCanary implements admin.ClusterSource: whether a host of a cluster is
// a canary, which the Clusters message has no field for.
func (s *Server) IsCanary(clusterName string, address *corev3.Address) bool {
	if s.clusters == nil {
		return false
	}
	c := s.clusters.Cluster(clusterName)
	sa := address.GetSocketAddress()
	ip, err := netip.ParseAddr(sa.GetAddress())
	if c == nil || err != nil || sa.GetPortValue() > 65535 {
		return false
	}
	return c.IsCanary(netip.AddrPortFrom(ip, uint16(sa.GetPortValue())).String())
}

// clusterStatus is one cluster's entry of /clusters.
func clusterStatus(c *cluster.Cluster) *adminv3.ClusterStatus {
	cs := &adminv3.ClusterStatus{
		Name:              c.Name(),
		AddedViaApi:       c.AddedViaAPI(),
		ObservabilityName: c.ObservabilityName(),
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
			thresholds(c, corev3.RoutingPriority_DEFAULT),
			thresholds(c, corev3.RoutingPriority_HIGH),
		}},
	}
	for _, h := range c.Hosts() {
		hs := hostStatus(h)
		hostSuccessRates(hs, h)
		cs.HostStatuses = append(cs.HostStatuses, hs)
	}
	addOutlier(cs, c.Outlier())
	return cs
}

// thresholds is one priority's circuit-breaker settings.
func thresholds(c *cluster.Cluster, p corev3.RoutingPriority) *clusterv3.CircuitBreakers_Thresholds {
	t := c.Thresholds(p)
	return &clusterv3.CircuitBreakers_Thresholds{
		Priority:           p,
		MaxConnections:     wrapperspb.UInt32(t.MaxConnections),
		MaxPendingRequests: wrapperspb.UInt32(t.MaxPendingRequests),
		MaxRequests:        wrapperspb.UInt32(t.MaxRequests),
		MaxRetries:         wrapperspb.UInt32(t.MaxRetries),
	}
}

// hostStatus is one host's entry: its counters in Envoy's order, then its
// gauges, its health and placement. Success rates come with outlier
// detection (addOutlier); unset, /clusters shows them as -1.
func hostStatus(h *upstream.Host) *adminv3.HostStatus {
	st := &h.Stats
	counter := func(name string, v uint64) *adminv3.SimpleMetric {
		return &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_COUNTER, Name: name, Value: v}
	}
	gauge := func(name string, v int64) *adminv3.SimpleMetric {
		// Gauges are never negative here: every decrement follows its
		// increment.
		return &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_GAUGE, Name: name, Value: uint64(max(v, 0))}
	}
	return &adminv3.HostStatus{
		Address: upstream.AddressProto(h.Address),
		Stats: []*adminv3.SimpleMetric{
			counter("cx_connect_fail", st.CxConnectFail.Load()),
			counter("cx_total", st.CxTotal.Load()),
			counter("rq_error", st.RqError.Load()),
			counter("rq_success", st.RqSuccess.Load()),
			counter("rq_timeout", st.RqTimeout.Load()),
			counter("rq_total", st.RqTotal.Load()),
			gauge("cx_active", st.CxActive.Load()),
			gauge("rq_active", st.RqActive.Load()),
		},
		HealthStatus: hostHealth(h),
		Weight:       h.Weight,
		Hostname:     h.Hostname,
		Priority:     h.Priority,
		Locality: &corev3.Locality{
			Region:  h.Locality.Region,
			Zone:    h.Locality.Zone,
			SubZone: h.Locality.SubZone,
		},
	}
}

// hostHealth is the host's health as /clusters reports it: its configured
// (EDS) status and its run-time flags.
func hostHealth(h *upstream.Host) *adminv3.HostHealthStatus {
	f := h.HealthFlags()
	return &adminv3.HostHealthStatus{
		EdsHealthStatus:                edsHealth(h),
		FailedActiveHealthCheck:        f&upstream.FailedActiveHC != 0,
		FailedOutlierCheck:             f&upstream.FailedOutlierCheck != 0,
		FailedActiveDegradedCheck:      f&upstream.DegradedActiveHC != 0,
		PendingDynamicRemoval:          f&upstream.PendingDynamicRemoval != 0,
		PendingActiveHc:                f&upstream.PendingActiveHC != 0,
		ExcludedViaImmediateHcFail:     f&upstream.ExcludedViaImmediateHCFail != 0,
		ActiveHcTimeout:                f&upstream.ActiveHCTimeout != 0,
		FailedDegradedOutlierDetection: f&upstream.DegradedOutlierDetection != 0,
	}
}

// edsHealth is the host's configured health as Envoy reports it: every
// status that takes a host out of rotation (UNHEALTHY, DRAINING, TIMEOUT)
// is its "failed EDS health" flag, shown as UNHEALTHY.
func edsHealth(h *upstream.Host) corev3.HealthStatus {
	switch {
	case h.FailedEDSHealth():
		return corev3.HealthStatus_UNHEALTHY
	case h.ConfigHealth == corev3.HealthStatus_DEGRADED:
		return corev3.HealthStatus_DEGRADED
	default:
		return corev3.HealthStatus_HEALTHY
	}
}

// nodeLocality is the bootstrap's node.locality (after the --service-zone
// override) as the load balancers read it, nil when it is not set: the
// locality whose hosts come first, and the zone that zone-aware routing
// keeps traffic in.
func nodeLocality(n *corev3.Node) *upstream.Locality {
	l := n.GetLocality()
	if l == nil {
		return nil
	}
	return &upstream.Locality{Region: l.GetRegion(), Zone: l.GetZone(), SubZone: l.GetSubZone()}
}
