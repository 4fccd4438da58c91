package cluster

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Limits of the load assignment.
const (
	// MinWeight and MaxWeight bound load_balancing_weight, of endpoints
	// and of localities: the specification's range of a host weight.
	MinWeight = 1
	MaxWeight = 100
	// maxPriority is the lowest priority level allowed (Envoy's API
	// validation says the same); it bounds the per-priority tables.
	maxPriority = 128
)

// lbMetadataKey and canaryKey locate the canary flag in endpoint metadata.
const (
	lbMetadataKey = "envoy.lb"
	canaryKey     = "canary"
)

// buildHosts turns a load assignment into hosts grouped by priority (index
// 0 first; levels without endpoints are empty), each level in
// configuration order. Errors are relative to the load assignment.
func buildHosts(cluster string, la *endpointv3.ClusterLoadAssignment) ([][]*upstream.Host, []error) {
	var (
		levels [][]*upstream.Host
		errs   []error
	)
	for i, lle := range la.GetEndpoints() {
		path := index("endpoints", i)
		p := lle.GetPriority()
		if p > maxPriority {
			errs = append(errs, configErrorf(join(path, "priority"), "%d is above the lowest priority %d", p, maxPriority))
			continue
		}
		if err := checkWeight(lle.GetLoadBalancingWeight()); err != nil {
			// Locality weights matter only to locality-weighted balancing,
			// which Outrigger does not implement yet, but a value outside
			// the range is a mistake either way.
			errs = append(errs, prefixed(join(path, "load_balancing_weight"), err))
		}
		loc := upstream.Locality{
			Region:  lle.GetLocality().GetRegion(),
			Zone:    lle.GetLocality().GetZone(),
			SubZone: lle.GetLocality().GetSubZone(),
		}
		for j, lbe := range lle.GetLbEndpoints() {
			h, herrs := buildHost(lbe)
			for _, err := range herrs {
				errs = append(errs, prefixed(index(join(path, "lb_endpoints"), j), err))
			}
			if h == nil {
				continue
			}
			h.Cluster = cluster
			h.Locality = loc
			h.Priority = p
			for uint32(len(levels)) <= p {
				levels = append(levels, nil)
			}
			levels[p] = append(levels[p], h)
		}
	}
	if len(levels) == 0 {
		// A cluster always has priority 0, even without endpoints.
		levels = [][]*upstream.Host{nil}
	}
	return levels, errs
}

// buildHost builds one host from an lb_endpoints entry, or reports every
// problem of the entry.
func buildHost(lbe *endpointv3.LbEndpoint) (*upstream.Host, []error) {
	ep := lbe.GetEndpoint()
	if ep == nil {
		return nil, []error{configErrorf("endpoint", "required")}
	}
	var errs []error
	addr, err := hostAddress(ep.GetAddress())
	if err != nil {
		errs = append(errs, prefixed(join("endpoint", "address"), err))
	}
	if err := checkWeight(lbe.GetLoadBalancingWeight()); err != nil {
		errs = append(errs, prefixed("load_balancing_weight", err))
	}
	canary, err := canaryFlag(lbe.GetMetadata())
	if err != nil {
		errs = append(errs, prefixed("metadata", err))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &upstream.Host{
		Address:      addr,
		Hostname:     ep.GetHostname(),
		Weight:       orDefault(lbe.GetLoadBalancingWeight(), MinWeight),
		Canary:       canary,
		ConfigHealth: lbe.GetHealthStatus(),
	}, nil
}

// hostAddress is the "ip:port" a host is dialled at. STATIC clusters need
// IP literals: there is nothing to resolve names with.
func hostAddress(a *corev3.Address) (string, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", configErrorf("socket_address", "required")
	}
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil || ip.Zone() != "" {
		return "", configErrorf(join("socket_address", "address"), "%q is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)", sa.GetAddress())
	}
	port := sa.GetPortValue()
	if port == 0 || port > 65535 {
		return "", configErrorf(join("socket_address", "port_value"), "%d is not a port (1 to 65535)", port)
	}
	return netip.AddrPortFrom(ip, uint16(port)).String(), nil
}

// checkWeight enforces the weight range of the specification; an unset
// weight means 1.
func checkWeight(w *wrapperspb.UInt32Value) error {
	if w == nil {
		return nil
	}
	if v := w.GetValue(); v < MinWeight || v > MaxWeight {
		return configErrorf("", "%d is out of range: a weight is %d to %d", v, MinWeight, MaxWeight)
	}
	return nil
}

// canaryFlag reads filter_metadata["envoy.lb"].canary. Envoy takes any
// value other than the boolean true as false; a value that is not a
// boolean is refused here instead, since it can only be a mistake.
func canaryFlag(md *corev3.Metadata) (bool, error) {
	v, ok := md.GetFilterMetadata()[lbMetadataKey].GetFields()[canaryKey]
	if !ok {
		return false, nil
	}
	b, isBool := v.GetKind().(*structpb.Value_BoolValue)
	if !isBool {
		return false, configErrorf(`filter_metadata["envoy.lb"].canary`, "must be a boolean")
	}
	return b.BoolValue, nil
}
