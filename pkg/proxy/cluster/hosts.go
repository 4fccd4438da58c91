package cluster

import (
	"net/netip"
	"strings"

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

// endpoint is one checked lb_endpoints entry: its host with everything
// but, for a name to resolve, the address; and its socket address.
type endpoint struct {
	host *upstream.Host
	// name is socket_address.address: an IP literal, or for DNS clusters
	// a host name.
	name string
	port uint16
}

// buildHosts turns a STATIC cluster's load assignment into hosts grouped
// by priority (index 0 first; levels without endpoints are empty), each
// level in configuration order. Errors are relative to the load
// assignment.
func buildHosts(cluster string, la *endpointv3.ClusterLoadAssignment) ([][]*upstream.Host, []error) {
	eps, errs := buildEndpoints(cluster, la, false)
	var levels [][]*upstream.Host
	for _, ep := range eps {
		p := ep.host.Priority
		for uint32(len(levels)) <= p {
			levels = append(levels, nil)
		}
		levels[p] = append(levels[p], ep.host)
	}
	if len(levels) == 0 {
		// A cluster always has priority 0, even without endpoints.
		levels = [][]*upstream.Host{nil}
	}
	return levels, errs
}

// buildEndpoints checks every endpoint of a load assignment, in
// configuration order. With names, an address may be a host name (DNS
// clusters); otherwise it must be an IP literal, and the host's Address is
// set. Errors are relative to the load assignment.
func buildEndpoints(cluster string, la *endpointv3.ClusterLoadAssignment, names bool) ([]endpoint, []error) {
	var (
		eps  []endpoint
		errs []error
		// weights are the locality weights per priority and locality:
		// Envoy keeps one per locality of a level, the last one given.
		weights map[localityKey]uint32
	)
	for i, lle := range la.GetEndpoints() {
		path := index("endpoints", i)
		p := lle.GetPriority()
		if p > maxPriority {
			errs = append(errs, configErrorf(join(path, "priority"), "%d is above the lowest priority %d", p, maxPriority))
			continue
		}
		// Locality weights matter only to locality-weighted balancing,
		// but a value outside the range is a mistake either way.
		if err := checkWeight(lle.GetLoadBalancingWeight()); err != nil {
			errs = append(errs, prefixed(join(path, "load_balancing_weight"), err))
		}
		loc := upstream.Locality{
			Region:  lle.GetLocality().GetRegion(),
			Zone:    lle.GetLocality().GetZone(),
			SubZone: lle.GetLocality().GetSubZone(),
		}
		if w := lle.GetLoadBalancingWeight(); w != nil {
			if weights == nil {
				weights = map[localityKey]uint32{}
			}
			weights[localityKey{p, loc}] = w.GetValue()
		}
		for j, lbe := range lle.GetLbEndpoints() {
			ep, herrs := buildEndpoint(lbe, names)
			for _, err := range herrs {
				errs = append(errs, prefixed(index(join(path, "lb_endpoints"), j), err))
			}
			if ep.host == nil {
				continue
			}
			ep.host.Cluster = cluster
			ep.host.Locality = loc
			ep.host.Priority = p
			eps = append(eps, ep)
		}
	}
	for _, ep := range eps {
		ep.host.LocalityWeight = weights[localityKey{ep.host.Priority, ep.host.Locality}]
	}
	return eps, errs
}

// localityKey is one locality of one priority level.
type localityKey struct {
	priority uint32
	locality upstream.Locality
}

// buildEndpoint checks one lb_endpoints entry, or reports every problem of
// the entry.
func buildEndpoint(lbe *endpointv3.LbEndpoint, names bool) (endpoint, []error) {
	ep := lbe.GetEndpoint()
	if ep == nil {
		return endpoint{}, []error{configErrorf("endpoint", "required")}
	}
	var errs []error
	var (
		name string
		port uint16
		err  error
	)
	if pipe := ep.GetAddress().GetPipe(); pipe != nil && !names {
		name, err = pipePath(pipe)
	} else {
		name, port, err = socketAddress(ep.GetAddress(), names)
	}
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
		return endpoint{}, errs
	}
	h := &upstream.Host{
		Hostname:     ep.GetHostname(),
		Weight:       orDefault(lbe.GetLoadBalancingWeight(), MinWeight),
		Canary:       canary,
		Metadata:     lbe.GetMetadata(),
		ConfigHealth: lbe.GetHealthStatus(),
	}
	if ip, err := netip.ParseAddr(name); err == nil && !names {
		h.Address = netip.AddrPortFrom(ip, port).String()
	} else if upstream.IsPipe(name) && !names {
		h.Address = name
	}
	return endpoint{host: h, name: name, port: port}, nil
}

// socketAddress checks an endpoint's address: an IP literal (STATIC
// clusters have nothing to resolve names with) or, with names, a host
// name too; and a port.
func socketAddress(a *corev3.Address, names bool) (string, uint16, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", 0, configErrorf("socket_address", "required")
	}
	addr := sa.GetAddress()
	if ip, err := netip.ParseAddr(addr); err != nil || ip.Zone() != "" {
		switch {
		case !names:
			return "", 0, configErrorf(join("socket_address", "address"), "%q is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)", addr)
		case !validHostName(addr):
			return "", 0, configErrorf(join("socket_address", "address"), "%q is neither a host name nor an IP address", addr)
		}
	}
	port := sa.GetPortValue()
	if port == 0 || port > 65535 {
		return "", 0, configErrorf(join("socket_address", "port_value"), "%d is not a port (1 to 65535)", port)
	}
	return addr, uint16(port), nil
}

// pipePath checks a static endpoint's pipe (a unix domain socket): its
// path is the host's address, as Envoy shows it. The path must be absolute,
// or start with "@" for Linux's abstract namespace, which is how the
// dialer tells a pipe from "ip:port"; the mode matters only to a server
// binding the socket.
func pipePath(p *corev3.Pipe) (string, error) {
	path := p.GetPath()
	if !upstream.IsPipe(path) {
		return "", configErrorf(join("pipe", "path"), "%q is neither an absolute path nor an abstract socket name (@name)", path)
	}
	return path, nil
}

// validHostName reports whether name can be asked of the DNS: labels of 1
// to 63 bytes without spaces or control characters, 253 bytes in all, an
// optional final dot.
func validHostName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' {
				return false
			}
		}
	}
	return true
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
