package bootstrap

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// plainEndpointFields are the fields an lb_endpoints entry of the plain
// shape may have, the shape control planes send for nearly every
// endpoint: a socket address (address, port_value, ipv4_compat), the
// endpoint's hostname, and the entry's health_status,
// load_balancing_weight and filter_metadata. isPlainEndpoint accepts only
// these, and only while the support table accepts each of them everywhere
// without conditions (plainEndpointsSupported).
var plainEndpointFields = []protoreflect.FullName{
	"envoy.config.endpoint.v3.LbEndpoint.endpoint",
	"envoy.config.endpoint.v3.LbEndpoint.health_status",
	"envoy.config.endpoint.v3.LbEndpoint.metadata",
	"envoy.config.endpoint.v3.LbEndpoint.load_balancing_weight",
	"envoy.config.endpoint.v3.Endpoint.address",
	"envoy.config.endpoint.v3.Endpoint.hostname",
	"envoy.config.core.v3.Address.socket_address",
	"envoy.config.core.v3.SocketAddress.address",
	"envoy.config.core.v3.SocketAddress.port_value",
	"envoy.config.core.v3.SocketAddress.ipv4_compat",
	"envoy.config.core.v3.Metadata.filter_metadata",
}

// plainAssignmentFields are the fields an assignment of the plain shape
// may have around its lb_endpoints entries: its cluster_name, and
// localities with their locality, load_balancing_weight and priority.
// isPlainAssignment accepts only these, and only while the support table
// accepts each of them everywhere without conditions.
var plainAssignmentFields = []protoreflect.FullName{
	"envoy.config.endpoint.v3.ClusterLoadAssignment.cluster_name",
	"envoy.config.endpoint.v3.ClusterLoadAssignment.endpoints",
	"envoy.config.endpoint.v3.LocalityLbEndpoints.locality",
	"envoy.config.endpoint.v3.LocalityLbEndpoints.lb_endpoints",
	"envoy.config.endpoint.v3.LocalityLbEndpoints.load_balancing_weight",
	"envoy.config.endpoint.v3.LocalityLbEndpoints.priority",
	"envoy.config.core.v3.Locality.region",
	"envoy.config.core.v3.Locality.zone",
	"envoy.config.core.v3.Locality.sub_zone",
}

// plainEndpoints is plainEndpointsSupported's answer, found once: the
// tables never change after initialization.
var plainEndpoints = plainEndpointsSupported(plainEndpointFields)

// plainAssignments is plainEndpointsSupported's answer for the fields
// around the entries (plainAssignmentFields), found once.
var plainAssignments = plainEndpoints && plainEndpointsSupported(plainAssignmentFields)

// plainEndpointsSupported reports whether the support table accepts every
// field of fields (plainEndpointFields, plainAssignmentFields) with no condition (no path restriction, no
// value list): then an entry of the plain shape that meets the API's
// constraints passes the reflective check, and isPlainEndpoint may say so
// without it. A table edit that restricts one of them turns the shortcut
// off rather than making it disagree with the table.
func plainEndpointsSupported(fields []protoreflect.FullName) bool {
	for _, name := range fields {
		rule, ok := lookupSupport(name)
		if !ok || rule.only != nil || len(rule.values) > 0 || rule.category != "" || len(rule.types) > 0 || rule.perFilter || rule.firstOfCategory != "" {
			return false
		}
	}
	return true
}

// isPlainEndpoint reports whether lbe is of the plain shape (only the
// fields of plainEndpointFields, the socket address's protocol TCP) and
// meets the constraints the generated validation puts on them (a
// non-empty address, a port up to 65535, a weight of at least 1, no empty
// filter_metadata key): such an entry passes ValidateLoadAssignment's
// per-entry check, which costs some microseconds of reflection where this
// costs a few field reads. False says nothing: the entry takes the full
// check, which finds and words any problem. plain is
// plainEndpointsSupported's answer (plainEndpoints; the tests pass false
// to compare with the full check).
//
// The fields are read from the generated structs, so a field added to
// one of these messages by a newer API would be missed here:
// TestPlainEndpointKnowsEveryField fails then, until this function reads
// it too.
func isPlainEndpoint(lbe *endpointv3.LbEndpoint, plain bool) bool {
	if !plain || lbe == nil {
		return false
	}
	host, ok := lbe.GetHostIdentifier().(*endpointv3.LbEndpoint_Endpoint)
	if !ok || host == nil || host.Endpoint == nil {
		return false
	}
	if w := lbe.GetLoadBalancingWeight(); w != nil && w.GetValue() < 1 {
		return false
	}
	if md := lbe.GetMetadata(); md != nil {
		if len(md.GetTypedFilterMetadata()) > 0 {
			return false
		}
		for k := range md.GetFilterMetadata() {
			if k == "" {
				return false
			}
		}
	}
	ep := host.Endpoint
	if ep.GetHealthCheckConfig() != nil || len(ep.GetAdditionalAddresses()) > 0 || ep.GetObservabilityName() != "" {
		return false
	}
	addr, ok := ep.GetAddress().GetAddress().(*corev3.Address_SocketAddress)
	if !ok || addr == nil || addr.SocketAddress == nil {
		return false
	}
	sa := addr.SocketAddress
	port, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	return ok && port != nil && port.PortValue <= 65535 &&
		sa.GetAddress() != "" && sa.GetProtocol() == corev3.SocketAddress_TCP &&
		sa.GetResolverName() == "" && sa.GetNetworkNamespaceFilepath() == ""
}

// isPlainAssignment reports whether cla, its lb_endpoints entries aside,
// is of the plain shape (only the fields of plainAssignmentFields) and
// meets the constraints the generated validation puts on them (a
// cluster_name, a locality weight of at least 1, a priority up to 128):
// then the check of the assignment without its entries, a reflective
// copy and walk of some microseconds that a discovery response of
// thousands of small assignments pays for each, finds nothing, and
// validateLoadAssignment skips it. False says nothing: the full check
// runs. plain is plainAssignments (the tests pass false to compare).
// TestPlainEndpointKnowsEveryField fails when one of these messages gets
// a field this function does not read.
func isPlainAssignment(cla *endpointv3.ClusterLoadAssignment, plain bool) bool {
	if !plain || cla.GetClusterName() == "" || cla.GetPolicy() != nil || len(cla.GetNamedEndpoints()) > 0 {
		return false
	}
	for _, l := range cla.GetEndpoints() {
		if l == nil || l.GetMetadata() != nil || l.GetProximity() != nil || l.GetLbConfig() != nil || l.GetPriority() > 128 {
			return false
		}
		if w := l.GetLoadBalancingWeight(); w != nil && w.GetValue() < 1 {
			return false
		}
	}
	return true
}
