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

// endpoint is one lb_endpoints entry of a load assignment: its host, and
// unless it kept its host by source (hostReuse.takeSource) what checking
// it found. A large assignment has one of these per entry on every
// update, so the kept ones are small: the rest is a checkedEntry of its
// own, for the entries checked.
type endpoint struct {
	host     *upstream.Host
	lbe      *endpointv3.LbEndpoint
	priority uint32
	// group is the index of the entry's locality_lb_endpoints group.
	group uint32
	*checkedEntry
}

// checkedEntry is what checking an entry found: its socket address and
// the settings and place its host takes.
type checkedEntry struct {
	// name is socket_address.address: an IP literal, or for DNS clusters
	// a host name; ip is the literal's address, invalid for a name.
	name string
	ip   netip.Addr
	port uint16
	// pipe: name is a unix socket's path (a STATIC cluster's pipe endpoint)
	// or an internal address ("envoy://listener/endpoint_id"): no IP, no port.
	pipe bool
	// The entry's own settings and place, for the host; locality is its
	// group's (shared).
	canary         bool
	locality       *upstream.Locality
	localityWeight uint32

	// localityMetadata is the group's metadata (shared), nil for none.
	localityMetadata *corev3.Metadata
	// hc is the endpoint's health_check_config, nil without one.
	hc *upstream.HostHealthCheck
	// extra are the endpoint's additional_addresses ("ip:port"), nil
	// without any.
	extra []string
}

// buildHosts turns a STATIC cluster's load assignment into hosts grouped
// by priority (index 0 first; levels without endpoints are empty), each
// level in configuration order. Errors are relative to the load
// assignment. With reuse, an endpoint identical to a host of it is that
// host (see hostReuse).
func buildHosts(cluster string, la *endpointv3.ClusterLoadAssignment, reuse *hostReuse) ([][]*upstream.Host, []error) {
	eps, errs := buildEndpoints(cluster, la, false, reuse)
	return levelsOf(eps), errs
}

// levelsOf groups built endpoints' hosts by priority (index 0 first;
// levels without endpoints are empty), each level in the endpoints'
// order, each level allocated once.
func levelsOf(eps []endpoint) [][]*upstream.Host {
	var counts []int
	for i := range eps {
		p := eps[i].priority
		for uint32(len(counts)) <= p {
			counts = append(counts, 0)
		}
		counts[p]++
	}
	if len(counts) == 0 {
		// A cluster always has priority 0, even without endpoints.
		return [][]*upstream.Host{nil}
	}
	levels := make([][]*upstream.Host, len(counts))
	for p, n := range counts {
		if n > 0 {
			levels[p] = make([]*upstream.Host, 0, n)
		}
	}
	for i := range eps {
		p := eps[i].priority
		levels[p] = append(levels[p], eps[i].host)
	}
	return levels
}

// buildEndpoints checks every endpoint of a load assignment, in
// configuration order. With names, an address may be a host name (DNS
// clusters); otherwise it must be an IP literal, and the host's Address is
// set. Errors are relative to the load assignment. With reuse (IP
// literals only), an endpoint identical to one of its hosts takes that
// host instead of a new one.
func buildEndpoints(cluster string, la *endpointv3.ClusterLoadAssignment, names bool, reuse *hostReuse) ([]endpoint, []error) {
	var (
		eps  []endpoint
		errs []error
	)
	if reuse != nil {
		// A large assignment is built once; the count is cheap.
		n := 0
		for _, lle := range la.GetEndpoints() {
			n += len(lle.GetLbEndpoints())
		}
		eps = make([]endpoint, 0, n)
	}
	// weights are the locality weights per priority and locality: Envoy
	// keeps one per locality of a level, the last one given. They are
	// known before any host is built, so that a host is complete when
	// built (a reused one is never written).
	weights := localityWeights(la)
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
		loc := localityOf(lle)
		weight := weights[localityKey{p, loc}]
		match := reuse.groupMatch(sourceGroup{p, loc, weight, lle.GetMetadata()})
		for j, lbe := range lle.GetLbEndpoints() {
			if h := reuse.takeSource(lbe, p, match); h != nil {
				// The message that built h, checked then.
				eps = append(eps, endpoint{host: h, lbe: lbe, priority: p, group: uint32(i)})
				continue
			}
			ep, herrs := buildEndpoint(lbe, names)
			if len(herrs) > 0 {
				for _, err := range herrs {
					errs = append(errs, prefixed(index(join(path, "lb_endpoints"), j), err))
				}
				continue
			}
			ep.priority, ep.group, ep.locality, ep.localityWeight = p, uint32(i), &loc, weight
			ep.localityMetadata = lle.GetMetadata()
			ep.host = reuse.take(&ep, cluster)
			eps = append(eps, ep)
		}
	}
	reuse.takeMoved(eps, cluster)
	for i := range eps {
		if eps[i].host == nil {
			eps[i].host = eps[i].newHost(cluster)
			reuse.built(eps[i].host)
		}
	}
	return eps, errs
}

// localityWeights are the load_balancing_weight of each locality of each
// priority level, the last one given.
func localityWeights(la *endpointv3.ClusterLoadAssignment) map[localityKey]uint32 {
	var weights map[localityKey]uint32
	for _, lle := range la.GetEndpoints() {
		if w := lle.GetLoadBalancingWeight(); w != nil {
			if weights == nil {
				weights = map[localityKey]uint32{}
			}
			weights[localityKey{lle.GetPriority(), localityOf(lle)}] = w.GetValue()
		}
	}
	return weights
}

// localityOf is a locality_lb_endpoints entry's locality.
func localityOf(lle *endpointv3.LocalityLbEndpoints) upstream.Locality {
	return upstream.Locality{
		Region:  lle.GetLocality().GetRegion(),
		Zone:    lle.GetLocality().GetZone(),
		SubZone: lle.GetLocality().GetSubZone(),
	}
}

// localityKey is one locality of one priority level.
type localityKey struct {
	priority uint32
	locality upstream.Locality
}

// buildEndpoint checks one lb_endpoints entry, or reports every problem of
// the entry; the host is built by the caller.
func buildEndpoint(lbe *endpointv3.LbEndpoint, names bool) (endpoint, []error) {
	ep := lbe.GetEndpoint()
	if ep == nil {
		return endpoint{}, []error{configErrorf("endpoint", "required")}
	}
	var errs []error
	var (
		name string
		ip   netip.Addr
		port uint16
		err  error
		pipe bool
	)
	if p := ep.GetAddress().GetPipe(); p != nil && !names {
		name, err = pipePath(p)
		pipe = err == nil
	} else if ia := ep.GetAddress().GetEnvoyInternalAddress(); ia != nil && !names {
		// An internal listener's address: like a pipe, no IP and no port.
		name, err = internalAddress(ia)
		pipe = err == nil
	} else {
		name, ip, port, err = socketAddress(ep.GetAddress(), names)
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
	hc, err := hostHealthCheck(ep.GetHealthCheckConfig())
	if err != nil {
		errs = append(errs, prefixed(join("endpoint", "health_check_config"), err))
	}
	extra, aerrs := additionalAddresses(ep, names || pipe)
	errs = append(errs, aerrs...)
	if len(errs) > 0 {
		return endpoint{}, errs
	}
	out := endpoint{lbe: lbe, checkedEntry: &checkedEntry{name: name, port: port, canary: canary, pipe: pipe, hc: hc, extra: extra}}
	if !names {
		out.ip = ip
	}
	return out, nil
}

// newHost builds the host of a checked entry.
func (ep *endpoint) newHost(cluster string) *upstream.Host {
	h := &upstream.Host{
		Hostname:       ep.lbe.GetEndpoint().GetHostname(),
		Cluster:        cluster,
		Locality:       *ep.locality,
		Priority:       ep.priority,
		Weight:         orDefault(ep.lbe.GetLoadBalancingWeight(), MinWeight),
		LocalityWeight: ep.localityWeight,
		Canary:         ep.canary,
		Metadata:       ep.lbe.GetMetadata(),
		ConfigHealth:   ep.lbe.GetHealthStatus(),
		HealthCheck:    ep.hc,
	}
	h.AdditionalAddresses = ep.extra
	h.LocalityMetadata = ep.localityMetadata
	if ep.ip.IsValid() {
		h.Address = netip.AddrPortFrom(ep.ip, ep.port).String()
	} else if ep.pipe {
		h.Address = ep.name
	}
	return h
}

// additionalAddresses checks an endpoint's additional_addresses: IP
// literals with a port, which its connections race with its address
// (happyeyeballs.go). Envoy supports them for STATIC and EDS clusters
// only: a DNS cluster's (names) or a pipe endpoint's are refused. Errors
// are relative to the lb_endpoints entry.
func additionalAddresses(ep *endpointv3.Endpoint, namesOrPipe bool) ([]string, []error) {
	list := ep.GetAdditionalAddresses()
	if len(list) == 0 {
		return nil, nil
	}
	if namesOrPipe {
		return nil, []error{configErrorf(join("endpoint", "additional_addresses"), "only an IP endpoint of a STATIC or EDS cluster has additional addresses (as in Envoy)")}
	}
	var (
		out  []string
		errs []error
	)
	for i, a := range list {
		path := join("endpoint", index("additional_addresses", i)+".address")
		_, ip, port, err := socketAddress(a.GetAddress(), false)
		if err != nil {
			errs = append(errs, prefixed(path, err))
			continue
		}
		out = append(out, netip.AddrPortFrom(ip, port).String())
	}
	return out, errs
}

// hostHealthCheck reads an endpoint's health_check_config; nil without
// one, or when it changes nothing. As in Envoy, its address is an IP
// literal (it is not resolved), whose own port is replaced by port_value
// when that is set.
func hostHealthCheck(c *endpointv3.Endpoint_HealthCheckConfig) (*upstream.HostHealthCheck, error) {
	if c == nil {
		return nil, nil
	}
	hc := &upstream.HostHealthCheck{Hostname: c.GetHostname(), Disabled: c.GetDisableActiveHealthCheck()}
	if p := c.GetPortValue(); p > 65535 {
		return nil, configErrorf("port_value", "%d is not a port (1 to 65535)", p)
	} else {
		hc.Port = uint16(p)
	}
	if a := c.GetAddress(); a != nil {
		sa := a.GetSocketAddress()
		if sa == nil {
			return nil, configErrorf("address", "a socket_address is required (pipes and internal addresses are not checked)")
		}
		ip, err := netip.ParseAddr(sa.GetAddress())
		if err != nil || ip.Zone() != "" {
			return nil, configErrorf("address.socket_address.address", "%q is not an IP address (the health check address is not resolved)", sa.GetAddress())
		}
		hc.IP = ip
		if hc.Port == 0 {
			if p := sa.GetPortValue(); p == 0 || p > 65535 {
				return nil, configErrorf("address.socket_address.port_value", "%d is not a port (1 to 65535)", p)
			} else {
				hc.Port = uint16(p)
			}
		}
	}
	if *hc == (upstream.HostHealthCheck{}) {
		return nil, nil
	}
	return hc, nil
}

// socketAddress checks an endpoint's address: an IP literal (STATIC
// clusters have nothing to resolve names with) or, with names, a host
// name too; and a port. ip is the address's when it is an IP literal
// without a zone.
func socketAddress(a *corev3.Address, names bool) (string, netip.Addr, uint16, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", netip.Addr{}, 0, configErrorf("socket_address", "required")
	}
	addr := sa.GetAddress()
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		ip = netip.Addr{}
		switch {
		case !names:
			return "", ip, 0, configErrorf(join("socket_address", "address"), "%q is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)", addr)
		case !validHostName(addr):
			return "", ip, 0, configErrorf(join("socket_address", "address"), "%q is neither a host name nor an IP address", addr)
		}
	}
	port := sa.GetPortValue()
	if port == 0 || port > 65535 {
		return "", netip.Addr{}, 0, configErrorf(join("socket_address", "port_value"), "%d is not a port (1 to 65535)", port)
	}
	return addr, ip, uint16(port), nil
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
