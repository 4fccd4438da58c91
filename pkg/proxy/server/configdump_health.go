package server

import (
	"net/netip"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// withLiveHealth replaces the configured health of the dumped endpoints
// with their hosts' health now, as Envoy's endpoint dump reports each
// host's coarse health: active health checking and outlier detection
// show there (UNHEALTHY, DEGRADED), not only health_status. A dumped load
// assignment is matched to its cluster by the name it is dumped under
// (the EDS service name, else the cluster's name).
func (s *Server) withLiveHealth(d *adminv3.EndpointsConfigDump) {
	if s.clusters == nil {
		return
	}
	live := map[string]map[string]*upstream.Host{}
	for _, c := range s.clusters.Clusters() {
		name := c.Name()
		if svc, ok := c.EDSServiceName(); ok {
			name = svc
		}
		byAddr := map[string]*upstream.Host{}
		for _, h := range c.Hosts() {
			byAddr[h.Address] = h
		}
		live[name] = byAddr
	}
	fix := func(a *anypb.Any) *anypb.Any {
		cla := &endpointv3.ClusterLoadAssignment{}
		if a == nil || a.UnmarshalTo(cla) != nil {
			return a
		}
		hosts := live[cla.GetClusterName()]
		if hosts == nil {
			return a
		}
		for _, group := range cla.GetEndpoints() {
			for _, lbe := range group.GetLbEndpoints() {
				if h := hosts[endpointAddress(lbe)]; h != nil {
					lbe.HealthStatus = hostCoarseHealth(h)
				}
			}
		}
		if p := pack(cla); p != nil {
			return p
		}
		return a
	}
	for _, e := range d.StaticEndpointConfigs {
		e.EndpointConfig = fix(e.EndpointConfig)
	}
	for _, e := range d.DynamicEndpointConfigs {
		e.EndpointConfig = fix(e.EndpointConfig)
	}
}

// endpointAddress is a dumped endpoint's "ip:port", as hosts spell it.
func endpointAddress(lbe *endpointv3.LbEndpoint) string {
	sa := lbe.GetEndpoint().GetAddress().GetSocketAddress()
	if sa == nil {
		return ""
	}
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil || sa.GetPortValue() > 65535 {
		return ""
	}
	return netip.AddrPortFrom(ip, uint16(sa.GetPortValue())).String()
}

// hostCoarseHealth is a host's health as Envoy's endpoint dump shows it.
func hostCoarseHealth(h *upstream.Host) corev3.HealthStatus {
	switch {
	case !h.Healthy():
		return corev3.HealthStatus_UNHEALTHY
	case h.Degraded():
		return corev3.HealthStatus_DEGRADED
	}
	return corev3.HealthStatus_HEALTHY
}
